// Talks to `abp-peer mcp --http` for scripts/mcp-conformance.sh, as a 2026-07-28 client:
//   node gateway.mjs URL wait   waits (up to 240 s: the page builds first) until the app's tools are listed;
//   node gateway.mjs URL done   calls `conformance_done`, which ends the app's page.
const [url, what] = process.argv.slice(2);
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'mcp-conformance.sh', version: '1' },
};
async function request(method, params = {}, name) {
  const headers = { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28',
    'mcp-method': method };
  if (name) headers['mcp-name'] = name;
  const response = await fetch(url, { method: 'POST', headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: meta } }) });
  return response.json();
}
if (what === 'wait') {
  const t0 = Date.now();
  for (;;) {
    const listed = await request('tools/list').catch(() => null);
    if (listed?.result?.tools?.some((t) => t.name === 'test_simple_text')) break;
    if (Date.now() - t0 > 240000) {
      console.error('the app did not join within 240 s');
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
} else if (what === 'done') {
  await request('tools/call', { name: 'conformance_done', arguments: {} }, 'conformance_done');
} else {
  console.error('usage: node gateway.mjs URL wait|done');
  process.exit(2);
}
