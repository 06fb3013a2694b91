// The app side, importing the app role build (`abp-wasm/app`: AbpApp, window.abp and the transports, ABP only).
import init, { AbpApp, PostMessageTransport } from 'abp-wasm/app';
import { probeApp } from './probe.js';

await init();
const app = new AbpApp({ id: 'vite.app', name: 'Vite app', version: '1.0.0' });
app.register('add', ({ a, b }) => a + b);
app.register('forever', (params, ctx) => new Promise((_, reject) => {
  ctx.signal.addEventListener('abort', () => { window.abortedWith = ctx.signal.reason.message; reject(ctx.signal.reason); });
}));
app.listen(PostMessageTransport.toParent({ allowedOrigins: [location.origin] }));
// window.abp for automation agents: replaces the bootstrap's placeholder and releases the calls that waited.
app.exposeGlobal();
// The browser's own agents too, where the page has WebMCP: `add` becomes a tool of document.modelContext.
if (document.modelContext) await app.exposeWebMCP();
// Messages for the other role: left unread by this build, answered and counted as the full build does.
window.probe = await probeApp(AbpApp, PostMessageTransport);
