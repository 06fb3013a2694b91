// What the README's TypeScript examples take as given, declared once for scripts/readme-ts.mjs (which compiles
// every ```ts block of the README with this file). Only names the examples use without defining them belong here.
import type { AbpApp, AbpClient, AgentInfo, CallContext, ProgressInfo } from 'abp-wasm';

declare global {
  /** The page's app and a connected client, where an example starts from one. */
  const app: AbpApp;
  const abp: AbpClient;
  const agent: AgentInfo;
  /** The host page's elements and values. */
  const iframe: HTMLIFrameElement;
  const stopButton: HTMLButtonElement;
  const bar: HTMLProgressElement;
  const signal: AbortSignal;
  const someCallId: string;
  const bytes: ArrayBuffer;
  const port: MessagePort;
  const other: MessagePort;
  function onProgress(progress: ProgressInfo): void;
  function renderPage(page: number, options: { signal: AbortSignal }): Promise<void>;
  /** Handlers an example registers without showing them. */
  function snap(params: unknown, ctx: CallContext): Promise<ArrayBuffer>;
  function exportPdf(params: { pages: number }, ctx: CallContext): Promise<ArrayBuffer>;
  /** The part of Playwright's `Page` the automation example uses. */
  const page: {
    exposeFunction(name: string, callback: (progress: ProgressInfo) => unknown): Promise<void>;
    goto(url: string): Promise<unknown>;
    evaluate<R>(pageFunction: () => R | Promise<R>): Promise<R>;
  };
}
