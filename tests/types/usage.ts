// Compiled with `tsc --noEmit --strict` against the generated pkg/abp_wasm.d.ts: the README's usage must
// type-check, typed handlers must be accepted, and results must carry real types (not `any`).
import init, {
  AbpApp, AbpClient, PostMessageTransport, WebSocketTransport, type WebSocketOptions,
  type ABPResponse, type CancelResponse, type CallContext, type ProgressInfo, type ElicitationResponse,
  type SupportInfo, type CapabilityDescriptor, type CapabilityChanges, type AbpManifest, type InitializeResult,
  type BinaryData, type BinaryDataReference, ABP_BOOTSTRAP, discover, type DiscoveryResult, WebMCPTransport,
  type TraceContext,
} from '../../pkg/abp_wasm.js';

export async function agent(iframe: HTMLIFrameElement, bar: HTMLProgressElement): Promise<string> {
  await init();
  const abp: AbpClient = await AbpClient.connect(
    PostMessageTransport.toIframe(iframe, { targetOrigin: 'https://app.example' }),
    { agent: { name: 'my-agent', version: '1.0.0' }, connectTimeout: 5000, messages: 'window' });
  const controller = new AbortController();
  const result: ABPResponse = await abp.call('export.pdf', { pages: 40 }, {
    signal: controller.signal, timeout: 60000, onProgress: (p: ProgressInfo) => { bar.value = p.progress; } });
  const trace: TraceContext = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01' };
  await abp.call('echo', undefined, { trace, signal: controller.signal });
  const cancelled: CancelResponse = await abp.cancel('call-1', 'user clicked stop');
  const support: SupportInfo = abp.supports('export.pdf');
  const caps: CapabilityDescriptor[] = abp.listCapabilities();
  abp.onElicitation = async (request, { signal }): Promise<ElicitationResponse> =>
    signal.aborted ? { success: false, cancelled: true } : { success: true, data: request.method };
  abp.onProgress = null;
  abp.onCapabilitiesChanged = (changes: CapabilityChanges) => { bar.title = changes.added.join(', '); };
  await abp.shutdown();
  // ABPResponse narrows: `error` is there when cancelled or failed, `data` when it succeeded.
  if (result.cancelled) { const c: string = result.error.code; void c; }
  else if (result.success) { const d: unknown = result.data; void d; }
  else { const retry: boolean = result.error.retryable; void retry; }
  // @ts-expect-error: `error` may be undefined until the response is narrowed
  void result.error.code;
  const typed = await abp.call<{ url: string }>('export.pdf');
  if (typed.success) { const url: string = typed.data.url; void url; }
  const code: string | undefined = result.error?.code;
  return `${result.cancelled} ${code} ${cancelled.cancelled} ${support.available} ${caps.length} ${abp.pendingCalls + 0}`;
}

export function app(): void {
  const app = new AbpApp({ id: 'com.example.pdf', name: 'PDF maker', version: '1.0.0' }, { maxConcurrent: 2 });
  app.register('export.pdf', async (params: { pages: number }, ctx: CallContext) => {
    for (let page = 0; page < params.pages; page++) {
      if (ctx.signal.aborted) throw ctx.signal.reason;
      ctx.progress({ progress: page + 1, total: params.pages, status: `page ${page + 1}` });
    }
    const answer: ElicitationResponse = await ctx.elicit({ method: 'confirm' });
    return { ok: answer.success };
  }, { description: 'Render HTML to PDF', inputSchema: { type: 'object', required: ['pages'] } });
  app.register('untyped', (params, ctx) => ({ params, id: ctx.callId }));
  // The caller's trace context: optional, its tracestate optional too.
  app.register('traced', (_params, ctx) => {
    const t: TraceContext | undefined = ctx.trace;
    return t === undefined ? null : [t.traceparent.split('-')[1], t.tracestate ?? ''];
  });
  app.register<{ pages: number }>('typed', (params, ctx) => params.pages + ctx.callId.length);
  // @ts-expect-error: params are `unknown` unless the handler or `register<P>` types them
  app.register('unknown', (params) => params.pages);
  app.listen(PostMessageTransport.toParent({ allowedOrigins: ['https://host.example'] }));
  const g = app.exposeGlobal();
  void g.call('export.pdf', { pages: 1 }).then((r: ABPResponse) => r.success);
  const n: number = app.activeCalls + app.notify('saved', { id: 1 });
  void n;
  app.register('camera.snap', () => 'snap', {
    requirements: [{ type: 'permission', description: 'camera', met: false }], alternatives: ['camera.upload'] });
  app.update('camera.snap', { available: false });
  const manifest: AbpManifest = app.manifest({ homepage: 'https://pdf.example', icon: 'https://pdf.example/icon.png' });
  void manifest.capabilities[0].name;
  const bare: AbpManifest = app.manifest();
  void bare;
  app.notify('ready');
  void app.register('confirming', async (_params, ctx) => {
    const r = await ctx.elicit({ method: 'elicitation/confirm', params: { message: 'Delete?', destructive: true }, timeout: 5000 });
    return r.success && r.data?.confirmed === true;
  });
  const head: string = `<script>${ABP_BOOTSTRAP}</script>`;
  void head;
}

/** A Playwright/Puppeteer agent's view of the page (what `page.evaluate` runs). */
export async function automationAgent(): Promise<boolean> {
  const abp = window.abp;
  if (!abp) return false;
  const off = abp.onCapabilitiesChanged((c: CapabilityChanges) => console.log(c.removed));
  const init: InitializeResult = await abp.initialize({ agent: { name: 'pw', version: '1' }, protocolVersion: '0.1',
    features: { notifications: true, progress: false, elicitation: true } });
  const caps: CapabilityDescriptor[] = await abp.listCapabilities();
  const support: SupportInfo = await abp.supports('camera.snap');
  const r: ABPResponse = await abp.call('echo', undefined, { timeout: 1000 });
  if (!init.error) { const id: string = init.sessionId; void id; }
  const typed = await abp.call<number>('count');
  if (typed.cancelled) { const c: string = typed.error.code; void c; } else if (typed.success) { const n: number = typed.data; void n; }
  abp.notifyProgress({ operationId: 'op-1', progress: 1, total: 2 });
  await abp.shutdown({ reason: 'done' });
  off();
  return init.features?.progress === false && caps.length > 0 && support.supported && r.success;
}

export async function overWebSocket(): Promise<boolean> {
  const options: WebSocketOptions = { maxMessageBytes: 1 << 20, reconnect: { initialDelay: 250, maxDelay: 5000 } };
  const app = new AbpApp({ id: 'com.example.ws', name: 'WS app', version: '1.0.0' });
  app.listen(await WebSocketTransport.connect('ws://127.0.0.1:8787/agent', options));
  const transport: WebSocketTransport = await WebSocketTransport.connect('wss://relay.example/relay/room/agent', { reconnect: true });
  const abp = await AbpClient.connect(transport, { agent: { name: 'my-agent', version: '1.0.0' } });
  const r: ABPResponse<ArrayBuffer> = await abp.call<ArrayBuffer>('bytes', { data: new Uint8Array([1, 2]) });
  const channel: 'channel' | 'window' | 'socket' | 'closed' = abp.channel;
  return r.success && channel === 'socket' && transport.url.length > 0;
}

export async function binary(abp: AbpClient, png: Uint8Array): Promise<number> {
  // A BinaryData keeps its mimeType and filename over WebSocket; its content arrives as an ArrayBuffer.
  const file: BinaryData = { content: png, mimeType: 'image/png', filename: 'a.png' };
  const text: BinaryData = { content: 'aGVsbG8=', encoding: 'base64', mimeType: 'text/plain', size: 5 };
  const r = await abp.call<BinaryData | BinaryDataReference>('thumbnail', { file, text });
  const out = r.data;
  if (out === undefined) return 0;
  if ('downloadUrl' in out) {
    const expires: string | number | undefined = out.expiresAt;
    return out.size + (typeof expires === 'number' ? expires : 0);
  }
  const bytes: number = out.content instanceof ArrayBuffer ? out.content.byteLength : out.size ?? 0;
  const name: string = out.filename ?? out.mimeType;
  // A bad URL rejects (it does not throw), so `.catch` sees it.
  const failed: WebSocketTransport | TypeError = await WebSocketTransport.connect('ftp://x').catch((e: TypeError) => e);
  return bytes + name.length + (failed instanceof TypeError ? 1 : 0);
}

export async function discovery(signal: AbortSignal): Promise<string[]> {
  const r: DiscoveryResult = await discover('https://app.example/', { timeout: 5000, signal });
  if (!r.supported) return [r.reason];
  const manifest: AbpManifest = r.manifest;
  const deprecated: boolean = manifest.capabilities.some((c) => c.deprecated === true);
  return [manifest.app.name, r.manifestUrl, String(deprecated), ...(r.warnings ?? [])];
}

export async function mcp(iframe: HTMLIFrameElement): Promise<boolean> {
  const app = new AbpApp({ id: 'com.example.tools', name: 'Tools', version: '1.0.0' });
  app.listen(PostMessageTransport.toParent({ allowedOrigins: ['https://host.example'], channel: 'mcp-iframe' }), { dialect: 'mcp' });
  const client = await AbpClient.connect(
    PostMessageTransport.toIframe(iframe, { targetOrigin: 'https://tools.example', channel: 'mcp-iframe' }),
    { agent: { name: 'my-agent', version: '1.0.0' }, dialect: 'mcp' });
  const r: ABPResponse = await client.call('search', { q: 'abp' }, { timeout: 1000 });
  return r.success;
}

// WebMCP both ways, as the README shows it.
export async function webmcp(app: AbpApp): Promise<string> {
  await app.exposeWebMCP();
  const abp: AbpClient = await AbpClient.connect(WebMCPTransport.document());
  const r: ABPResponse = await abp.call('search', { q: 'abp' }, { timeout: 5000 });
  return `${r.success} ${abp.listCapabilities().length}`;
}
