// The agent side, importing the package exactly as the README says.
import init, { AbpClient, PostMessageTransport } from 'abp-wasm';

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
window.result = { sum: done.data, cancelled: stopped.cancelled, code: stopped.error?.code };
document.getElementById('out').textContent = JSON.stringify(window.result);
