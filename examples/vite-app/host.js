// The agent side, importing the agent role build (`abp-wasm/agent`: AbpClient and the transports, ABP only).
import init, { AbpClient, PostMessageTransport, WebMCPTransport } from 'abp-wasm/agent';
import { probeAgent } from './probe.js';

await init();
const iframe = document.getElementById('app');
const abp = await AbpClient.connect(
  PostMessageTransport.toIframe(iframe, { targetOrigin: location.origin }),
  { agent: { name: 'vite-consumer', version: '1.0.0' } });
const done = await abp.call('add', { a: 2, b: 40 });
const controller = new AbortController();
const pending = abp.call('forever', {}, { signal: controller.signal });
setTimeout(() => controller.abort('stop'), 50);
const stopped = await pending;
// The agent build speaks ABP only: another dialect is a TypeError that names the full package.
let roleError = null;
try {
  await AbpClient.connect(PostMessageTransport.fromPort(new MessageChannel().port1), { agent: { name: 'vite-consumer', version: '1.0.0' }, dialect: 'mcp' });
} catch (e) {
  roleError = e instanceof TypeError ? e.message : String(e);
}
// So is the MCP-B envelope (`channel`), which only the MCP dialect uses.
let channelError = null;
try {
  PostMessageTransport.toIframe(iframe, { targetOrigin: location.origin, channel: 'mcp-iframe' });
} catch (e) {
  channelError = e instanceof TypeError ? e.message : String(e);
}
// Messages for the other role: left unread by this build, answered and counted as the full build does.
const probe = await probeAgent(AbpClient, PostMessageTransport);
// The page's own WebMCP tools, through the agent build's WebMCPTransport (where the page has WebMCP).
let webmcp = null;
if (document.modelContext) {
  await document.modelContext.registerTool({ name: 'host.double', description: 'Doubles n', execute: ({ n }) => ({ n: n * 2 }) });
  const tools = await AbpClient.connect(WebMCPTransport.document());
  webmcp = (await tools.call('host.double', { n: 21 })).data?.n;
}
window.result = { sum: done.data, cancelled: stopped.cancelled, code: stopped.error?.code, roleError, channelError, probe, webmcp };
document.getElementById('out').textContent = JSON.stringify(window.result);
