// The full package ('abp-wasm': both roles and every dialect) in one page: an app and a client joined by a
// MessageChannel, speaking MCP, which the role builds leave out.
import init, { AbpApp, AbpClient, PostMessageTransport } from 'abp-wasm';
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
window.fullResult = { sum: Number(done.data.content[0].text), probeAgent: await probeAgent(AbpClient, PostMessageTransport),
  probeApp: await probeApp(AbpApp, PostMessageTransport) };
document.getElementById('out').textContent = JSON.stringify(window.fullResult);
