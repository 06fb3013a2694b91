// Compiled with usage.ts by both tsconfigs here: the typings of the role builds a page imports ('abp-wasm/agent',
// 'abp-wasm/app') must compile too, whether or not the program's lib has `Symbol.dispose`.
import initAgent, { AbpClient, PostMessageTransport, WebSocketTransport, WebMCPTransport } from '../../pkg/agent/abp_wasm.js';
import initApp, { AbpApp, PostMessageTransport as AppTransport, ABP_BOOTSTRAP } from '../../pkg/app/abp_wasm.js';

export async function host(iframe: HTMLIFrameElement): Promise<number | undefined> {
  await initAgent();
  const abp = await AbpClient.connect(PostMessageTransport.toIframe(iframe, { targetOrigin: 'https://app.example' }));
  const sum = await abp.call<number>('add', { a: 2, b: 40 });
  abp.free();
  const socket: WebSocketTransport = await WebSocketTransport.connect('ws://127.0.0.1:8787/agent');
  socket.free();
  WebMCPTransport.document().free();
  return sum.success ? sum.data : undefined;
}

export async function app(): Promise<string> {
  await initApp();
  const app = new AbpApp({ id: 'com.example.roles', name: 'Roles', version: '1.0.0' });
  app.register<{ a: number; b: number }>('add', ({ a, b }) => a + b);
  app.listen(AppTransport.toParent({ allowedOrigins: ['https://host.example'] }));
  app.close();
  app.free();
  return ABP_BOOTSTRAP;
}
