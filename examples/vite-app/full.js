// The full package ('abp-wasm': both roles and every dialect) in one page: an app and a client joined by a
// MessageChannel, speaking MCP, which the role builds leave out.
import init, { AbpApp, AbpClient, PostMessageTransport, discover } from 'abp-wasm';
import { probeAgent, probeApp } from './probe.js';

await init();
const channel = new MessageChannel();
const app = new AbpApp({ id: 'vite.full', name: 'Full build', version: '1.0.0' });
app.register('add', ({ a, b }) => a + b, { description: 'Adds two numbers' });
app.listen(PostMessageTransport.fromPort(channel.port2), { dialect: 'mcp' });
const abp = await AbpClient.connect(PostMessageTransport.fromPort(channel.port1),
  { agent: { name: 'vite-consumer', version: '1.0.0' }, dialect: 'mcp' });
const done = await abp.call('add', { a: 20, b: 22 });
// In MCP a result is the tool's CallToolResult: the returned value as text content.
// The same probes as the role builds' pages, for scripts/consumer.mjs to compare.
const probes = { probeAgent: await probeAgent(AbpClient, PostMessageTransport), probeApp: await probeApp(AbpApp, PostMessageTransport) };
// discover() of the full package: its first call loads the discovery build, which no other call needed.
const wasmFetched = () => performance.getEntriesByType('resource').map((r) => r.name).filter((n) => n.endsWith('.wasm'));
const wasmBeforeDiscover = wasmFetched();
// The time limit covers the loading: none at all is over before the discovery build can arrive.
const tooSoon = await discover(location.href, { timeout: 0 });
const found = await discover(location.href);
const again = await discover(location.href, { timeout: 5000 });
window.fullResult = { sum: Number(done.data.content[0].text), ...probes, wasmBeforeDiscover, wasmAfterDiscover: wasmFetched(),
  discovered: found.supported ? found.manifest.app.id : found.reason, again: again.supported,
  tooSoon: tooSoon.reason, badUrl: await discover(42).then(() => 'resolved', (e) => `${e?.name}: ${e?.message}`),
  badTimeout: await discover(location.href, { timeout: -1 }).then(() => 'resolved', (e) => `${e?.name}: ${e?.message}`) };
document.getElementById('out').textContent = JSON.stringify(window.fullResult);
