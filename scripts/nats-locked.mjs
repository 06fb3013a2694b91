// A locked nats-server on a free 127.0.0.1 port, the way docs/peer.md deploys one: a user whose permissions are
// publish and subscribe on `abp.>` only, a random password, and TLS with a throwaway certificate authority that
// openssl makes here. abp-peer refuses a server that lets anybody in, so the checks and benchmarks that run a
// cluster start theirs with this. `startNats({ tls: false })` leaves TLS out (the plaintext benchmark figures).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const natsBin = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find(existsSync) ?? 'nats-server';

export const natsInstalled = () => natsBin !== 'nats-server' || (() => {
  try { execFileSync('nats-server', ['--version'], { stdio: 'ignore' }); return true; } catch { return false; }
})();

const freePort = () => new Promise((resolve, reject) => {
  const s = createServer().listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  s.on('error', reject);
});

const listening = (port) => new Promise((resolve) => {
  const c = connect(port, '127.0.0.1', () => { c.destroy(); resolve(true); });
  c.on('error', () => resolve(false));
});

/** Makes a CA and a server certificate for 127.0.0.1 in `dir`; returns their paths. */
function certificates(dir) {
  const ssl = (...args) => execFileSync('openssl', args, { stdio: 'ignore' });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const ca = join(dir, 'ca.pem'), caKey = join(dir, 'ca.key');
  ssl('req', '-x509', ...ec, '-keyout', caKey, '-out', ca, '-days', '2', '-subj', '/CN=abp test CA');
  const cert = join(dir, 'server.pem'), key = join(dir, 'server.key'), csr = join(dir, 'server.csr');
  ssl('req', ...ec, '-keyout', key, '-out', csr, '-subj', '/CN=127.0.0.1');
  const ext = join(dir, 'server.ext');
  writeFileSync(ext, 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  ssl('x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-out', cert, '-days', '2',
    '-extfile', ext);
  return { ca, cert, key };
}

/**
 * Starts the server; resolves once it listens. `args` are what each abp-peer needs to join it (`--nats URL` and,
 * with TLS, `--nats-tlsca`); `url` has the password in it, so print `shown` instead.
 */
export async function startNats({ tls = true } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'abp-nats-'));
  const port = await freePort();
  const password = randomBytes(12).toString('hex');
  const certs = tls ? certificates(dir) : null;
  const config = join(dir, 'nats.conf');
  writeFileSync(config, [
    `listen: "127.0.0.1:${port}"`,
    'authorization {',
    `  users = [ { user: "abp", password: "${password}",`,
    '    permissions: { publish: ["abp.>"], subscribe: ["abp.>"] } } ]',
    '}',
    ...(certs ? [`tls { cert_file: "${certs.cert}", key_file: "${certs.key}" }`] : []),
  ].join('\n'));
  const server = { proc: spawn(natsBin, ['-c', config], { stdio: 'ignore' }) };
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const t0 = Date.now(); !(await listening(port));) {
    if (Date.now() - t0 > 10000 || server.proc.exitCode !== null) throw new Error('nats-server did not start');
    await new Promise((r) => setTimeout(r, 20));
  }
  const scheme = certs ? 'tls' : 'nats';
  const url = `${scheme}://abp:${password}@127.0.0.1:${port}`;
  return {
    /** The server running now (`restart` starts another). */
    get proc() { return server.proc; },
    port, url, tls: !!certs,
    shown: `${scheme}://abp:***@127.0.0.1:${port}`,
    args: ['--nats', url, ...(certs ? ['--nats-tlsca', certs.ca] : [])],
    /** Stops the server running now (a child left running would keep this Node process alive). */
    stop: (signal = 'SIGTERM') => { server.proc.kill(signal); },
    /** Starts it again on the same port with the same configuration (after `stop`). */
    restart: () => { server.proc = spawn(natsBin, ['-c', config], { stdio: 'ignore' }); },
  };
}
