// Compiled by tsconfig.esnext.json only, as a program whose lib has `Symbol.dispose` (`esnext`): the classes of
// every build are `Disposable` there, so `using` frees them at the end of the scope.
import { AbpApp } from '../../pkg/abp_wasm.js';
import { AbpClient, PostMessageTransport } from '../../pkg/agent/abp_wasm.js';
import { AbpApp as RoleApp } from '../../pkg/app/abp_wasm.js';

export async function scoped(iframe: HTMLIFrameElement): Promise<void> {
  using app = new AbpApp({ id: 'com.example.using', name: 'Using', version: '1.0.0' });
  using roleApp = new RoleApp({ id: 'com.example.using', name: 'Using', version: '1.0.0' });
  using client = await AbpClient.connect(PostMessageTransport.toIframe(iframe, { targetOrigin: 'https://app.example' }));
  const disposables: Disposable[] = [app, roleApp, client];
  disposables[0][Symbol.dispose]();
}
