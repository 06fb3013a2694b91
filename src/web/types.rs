//! The TypeScript surface: interfaces for every options object and result, and the duck-typed extern types
//! that let the exported functions name them (so the generated `.d.ts` has real types, not `any`).

use wasm_bindgen::prelude::*;

// Goes into the `.d.ts` as it is. The `CallOptions` and `ClientOptions` interfaces in it are written from
// src/web/options.rs, and checked against it, by tests/options_drift: edit the options there, then run
// `ABP_REGENERATE=1 cargo test --test options_drift`.
#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** The error codes of the ABP error table. */
export type ABPErrorCode =
  | 'NOT_INITIALIZED' | 'ALREADY_INITIALIZED' | 'SESSION_EXPIRED' | 'SESSION_INVALID'
  | 'UNKNOWN_CAPABILITY' | 'CAPABILITY_UNAVAILABLE' | 'REQUIREMENT_NOT_MET'
  | 'PERMISSION_DENIED' | 'PERMISSION_REQUIRED'
  | 'INVALID_PARAMS' | 'MISSING_PARAM' | 'INVALID_TYPE'
  | 'OPERATION_FAILED' | 'PRECONDITION_FAILED' | 'TIMEOUT' | 'CANCELLED' | 'RATE_LIMITED'
  | 'NOT_IMPLEMENTED' | 'NOT_SUPPORTED' | 'BROWSER_ERROR' | 'INTERNAL_ERROR' | 'DISCONNECTED' | 'TRANSPORT_ERROR';

/** An ABP error. `code` is one of the ABP error codes, or an app's own. A handler that throws
 * `{ code, message, retryable?, details?, retryAfter?, alternatives? }` has all of them reach the agent. */
export interface ABPError {
  code: ABPErrorCode | (string & {});
  message: string;
  /** Whether trying again may succeed. Defaults from the ABP error table unless the thrower set it. */
  retryable: boolean;
  details?: unknown;
  /** Milliseconds to wait before retrying (RATE_LIMITED and the like). */
  retryAfter?: number;
  /** Capability names to try instead. */
  alternatives?: string[];
}

/** What every `call` resolves to. It never rejects for cancellation, timeouts or lost connections. A union that
 * narrows on `cancelled` and `success`: `if (r.cancelled) r.error.code; else if (r.success) r.data; else
 * r.error.code`. `T` is what the caller expects in `data`; nothing checks it. */
export type ABPResponse<T = unknown> = ABPSuccess<T> | ABPFailure | ABPCancelled;

/** A call that succeeded: `data` is what the handler returned. */
export interface ABPSuccess<T = unknown> {
  success: true;
  data: T;
  error?: undefined;
  cancelled?: false;
  /** How long the call took, in ms (the app's handler time, or the client's when it settled the call itself). */
  metadata?: { duration: number };
  callId?: string;
}

/** A call that failed: `error.code` says why (the handler's own error, UNKNOWN_CAPABILITY, DISCONNECTED, …). */
export interface ABPFailure {
  success: false;
  error: ABPError;
  data?: undefined;
  cancelled?: false;
  metadata?: { duration: number };
  callId?: string;
}

/** A call that was cancelled (by your signal, a timeout, or `cancel`): `error.code` is CANCELLED or TIMEOUT. */
export interface ABPCancelled {
  success: false;
  cancelled: true;
  error: ABPError;
  data?: undefined;
  metadata?: { duration: number };
  callId?: string;
}

export interface CancelResponse {
  callId: string;
  cancelled: boolean;
  /** Why it was not cancelled: 'Operation not found' or 'Operation already completed'. */
  reason?: string;
  error?: ABPError;
}

/** A progress update, as the app reported it (plus routing fields). */
export interface ProgressInfo {
  progress: number;
  total?: number;
  percentage?: number;
  status?: string;
  stage?: string;
  estimatedRemaining?: number;
  callId?: string;
  operationId?: string;
  [extra: string]: unknown;
}

export interface CallOptions {
  /** Aborting it cancels the call: the app's handler signal aborts, and the call resolves `cancelled: true`. */
  signal?: AbortSignal;
  /** Milliseconds. On expiry the call is cancelled and resolves with error code TIMEOUT (retryable). */
  timeout?: number;
  /** Restart `timeout` whenever progress arrives. */
  resetTimeoutOnProgress?: boolean;
  /** Upper bound for the whole call, progress or not. */
  maxTotalTimeout?: number;
  /** Your own id for the call (default: a UUID). Must not be in flight already. */
  callId?: string;
  /** Progress token sent to the app (default: the callId when progress is wanted). */
  progressToken?: string;
  onProgress?: (progress: ProgressInfo) => void;
  /** ArrayBuffers (or other transferables) inside `params` to move instead of copy. */
  transfer?: Transferable[];
  /** Milliseconds to wait for the app's answer after sending a cancel (default: the client's cancelGrace). */
  cancelGrace?: number;
  /** W3C trace context sent with the call (in its `_meta`), for the app's `ctx.trace`: a `traceparent` that is
   *  not valid W3C Trace Context is not sent, nor is a `tracestate` that is not. */
  trace?: TraceContext;
}

/** The protocol a connection speaks: ABP (the default), MCP (JSON-RPC: `tools/list`, `tools/call`,
 * `notifications/cancelled`, `notifications/progress`), ACP (JSON-RPC: a request per capability,
 * `$/cancel_request`, -32800) or Tesseron (`actions/invoke`, `actions/cancel`, -32001/-32002, the app speaks
 * first; `AbpClient` is the gateway, `AbpApp` the app; over a WebSocket with subprotocol `tesseron-gateway`).
 * The JS API is the same for all. */
export type Dialect = 'abp' | 'mcp' | 'acp' | 'tesseron';

/** How an ABP session to a frame or window carries its messages (`ClientOptions.messages`; `client.channel`
 * says which is in use): a private `MessageChannel` offered with `initialize`, or window messages. */
export type MessagePath = 'channel' | 'window';

/** `app.listen(transport, options)`. */
export interface ListenOptions {
  /** `'mcp'`: serve the registry as MCP tools; `'acp'`: as ACP methods; `'tesseron'`: as Tesseron actions to a
   * gateway this app dialed (a capability's `timeoutMs` is its action timeout). Default `'abp'`. */
  dialect?: Dialect;
}

export interface WebMCPExposeOptions {
  /** Origins (secure ones: https, or http on localhost/127.0.0.1) whose pages may see the tools when this page is
   * in a frame: passed to `registerTool(tool, { exposedTo })`. Chromium 156 accepts the list, but does not show
   * a cross-origin frame's tools in the embedding page's `getTools()`. */
  exposedTo?: string[];
}

export interface AgentInfo { name: string; version: string }
export interface AppInfo { id: string; name: string; version: string; description?: string }

export interface ClientOptions {
  /** Who is calling, as the app sees it (default `{ name: 'abp-wasm', version: <this package's> }`). */
  agent?: AgentInfo;
  /** The protocol the app speaks: `'abp'` (the default), `'mcp'` (the tools of an MCP server), `'acp'` (an
   *  ACP agent's methods) or `'tesseron'` (a Tesseron app, dialled as its gateway). */
  dialect?: Dialect;
  /** `dialect: 'mcp'` only: the one MCP version to speak. `'2026-07-28'` never sends `initialize`;
   *  `'2025-11-25'` (or an older one) starts with it. By default the client asks `server/discover` first
   *  and falls back to `initialize` when the server does not answer it. */
  protocolVersion?: string;
  /** How long to keep (re)sending `initialize` before giving up, ms (default 10000). */
  connectTimeout?: number;
  /** Default wait for a cancel to be answered before settling locally, ms (default 1000). */
  cancelGrace?: number;
  /** While calls are pending, ask an app that has been silent this long whether it is still there (ms; off by
   *  default). No answer within the same time resolves every pending call DISCONNECTED. For MessagePorts to
   *  workers and half-open sockets, which give no other sign. Keep it above the longest time the app's page
   *  may be blocked by synchronous work. */
  heartbeat?: number;
  /** To a frame or window, in ABP: `'channel'` (the default) offers the app a private `MessageChannel` with
   *  `initialize`, and the session moves onto it once the app takes it; `'window'` stays on window messages,
   *  which in Firefox make a single call's round trip quicker and in Chromium slower (BENCHMARKS.md, "Window
   *  messages or the private channel"). */
  messages?: MessagePath;
  onProgress?: (progress: ProgressInfo) => void;
  onNotification?: (notification: NotificationInfo) => void;
  onElicitation?: ElicitationHandler;
  onCapabilitiesChanged?: (changes: CapabilityChanges) => void;
}

export interface NotificationInfo { event: string; data?: unknown }

/** Something a capability needs before it can run. A call while one is not `met` answers REQUIREMENT_NOT_MET. */
export interface Requirement {
  type: 'permission' | 'context' | 'gesture' | 'browser' | 'hardware' | 'state';
  description: string;
  met: boolean;
  /** How the user or agent can meet it. */
  resolution?: unknown;
}

/** A capability as the app describes it (the SDK fills `available`, `requirements`, `features`). */
export interface CapabilityDescriptor {
  /** `namespace.action` in camelCase; vendors use a reverse-domain prefix. */
  name: string;
  description?: string;
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  /** False: calls answer CAPABILITY_UNAVAILABLE without running the handler. */
  available: boolean;
  requirements: Requirement[];
  features: Record<string, unknown>;
  experimental?: boolean;
  deprecated?: boolean;
  deprecationMessage?: string;
  alternatives?: string[];
  /** For an MCP host through `abp-peer mcp` (revision 2026-07-28 with the tasks extension): run a call as a task
   * the host polls, when the host can take one (`'optional'`), or only so (`'required'`; a host without the
   * extension then gets error -32021). Ignored everywhere else. */
  task?: 'optional' | 'required';
  [extra: string]: unknown;
}

/** What changed in the app's capabilities (`onCapabilitiesChanged`, `__abp_capabilities_changed`). */
export interface CapabilityChanges {
  added: string[];
  removed: string[];
  changed: string[];
  /** The whole list after the change. */
  capabilities: CapabilityDescriptor[];
}

/** The subset of JSON Schema the app validates: type, required, properties, enum, const, minimum, maximum,
 * minLength, maxLength, pattern, format (date-time, email, uri, uuid), items. */
export interface JsonSchema {
  type?: 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null' | string[];
  required?: string[];
  properties?: Record<string, JsonSchema>;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  const?: unknown;
  pattern?: string;
  format?: 'date-time' | 'email' | 'uri' | 'uuid' | (string & {});
  items?: JsonSchema;
  [extra: string]: unknown;
}

/** `supports(name)`: whether the app offers a capability and whether it can run now. */
export interface SupportInfo {
  supported: boolean;
  available: boolean;
  reason?: string;
  requirements?: Requirement[];
  features?: Record<string, unknown>;
  alternatives?: string[];
}

/** The standard elicitation methods of ABP, their params and what a successful answer's `data` holds. */
export interface StandardElicitations {
  'elicitation/input': { params: { prompt: string; schema?: JsonSchema }; result: { value: unknown } };
  'elicitation/preference': { params: { prompt: string; schema?: JsonSchema; default?: unknown }; result: { value: unknown } };
  'elicitation/confirm': { params: { message: string; destructive?: boolean }; result: { confirmed: boolean } };
  'elicitation/select': {
    params: { prompt: string; options: { value: unknown; label: string }[]; default?: unknown };
    result: { selected: unknown };
  };
  'elicitation/resource': { params: { type: string; uri?: string }; result: { content: unknown; mimeType: string } };
  'sampling/create': { params: { task: string; context?: unknown }; result: { result: unknown } };
}

/** A standard elicitation request, typed by its method. */
export type StandardElicitationRequest = {
  [M in keyof StandardElicitations]: { method: M; params: StandardElicitations[M]['params']; timeout?: number; callId?: string }
}[keyof StandardElicitations];

/** An elicitation request: a standard one, or an app's own method. `timeout` (ms) is enforced on both sides. */
export interface ElicitationRequest { method: string; params?: unknown; timeout?: number; callId?: string }
export interface ElicitationResponse<T = unknown> { success: boolean; data?: T; error?: ABPError; cancelled?: boolean }
export type ElicitationHandler = (request: ElicitationRequest, options: { signal: AbortSignal })
  => ElicitationResponse | Promise<ElicitationResponse>;

/** W3C Trace Context (https://www.w3.org/TR/trace-context/) carried with a call: what a caller gives as
 * `CallOptions.trace`, or an MCP or ACP host in the request's `_meta`, and what the handler reads as `ctx.trace`.
 * Only valid values travel: an invalid `traceparent` drops the context, an invalid `tracestate` drops itself. */
export interface TraceContext {
  /** `version-traceid-parentid-flags`, e.g. `00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01`. */
  traceparent: string;
  tracestate?: string;
}

/** What a capability handler receives besides its params. */
export interface CallContext {
  /** Aborts when the agent cancels the call (or the session ends). `signal.reason` is an AbortError
   * DOMException whose message is the agent's reason. */
  signal: AbortSignal;
  callId: string;
  progressToken?: string;
  /** The caller's trace context, when it sent a valid one (in ABP's, MCP's or ACP's `_meta`): start the
   * handler's spans as its children. */
  trace?: TraceContext;
  /** Report progress. Cheap to call in a loop: updates are coalesced, and the last one is sent before the result. */
  progress(info: ProgressInfo | number): void;
  /** Ask the agent something; resolves `cancelled: true` if this call is cancelled first, TIMEOUT when the
   * request's `timeout` passes, NOT_SUPPORTED when the agent did not enable elicitation or that method. */
  elicit<M extends keyof StandardElicitations>(request: { method: M; params: StandardElicitations[M]['params']; timeout?: number }):
    Promise<ElicitationResponse<StandardElicitations[M]['result']>>;
  elicit(request: ElicitationRequest): Promise<ElicitationResponse>;
  notify(event: string, data?: unknown): void;
  /** Transfer (move) these buffers with the result instead of copying them. */
  transfer(list: Transferable[]): void;
}

/** Return a value (or a Promise of one). Throw `{ code, message }` for an ABP error, anything else for
 * OPERATION_FAILED; an AbortError or anything thrown after the signal aborted counts as cancelled. */
export type CapabilityHandler<P = unknown, R = unknown> = {
  // Method syntax keeps parameters bivariant, so `(params: { pages: number }, ctx) => …` is accepted.
  handler(params: P, ctx: CallContext): R | Promise<R>;
}['handler'];

export interface AppOptions {
  /** Calls beyond this many (per session) wait in a FIFO queue. Default: no limit. */
  maxConcurrent?: number;
}

/** A capability's descriptor as given to `register` (every field optional; checked, defaults filled). */
export interface CapabilityOptions {
  description?: string;
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  available?: boolean;
  requirements?: Requirement[];
  features?: Record<string, unknown>;
  experimental?: boolean;
  deprecated?: boolean;
  deprecationMessage?: string;
  alternatives?: string[];
  /** For an MCP host through `abp-peer mcp` (revision 2026-07-28 with the tasks extension): run a call as a task
   * the host polls, when the host can take one (`'optional'`), or only so (`'required'`; a host without the
   * extension then gets error -32021). Ignored everywhere else. */
  task?: 'optional' | 'required';
  [extra: string]: unknown;
}

/** What `app.manifest(extra)` adds to the manifest's `app`. */
export interface ManifestExtra {
  description?: string;
  homepage?: string;
  /** URL of a 192×192 PNG. */
  icon?: string;
  support?: string | Record<string, string>;
}

/** The `app` of an ABP manifest. */
export interface AbpManifestApp {
  id: string;
  name: string;
  version: string;
  description?: string;
  homepage?: string;
  /** A URL (the ABP docs suggest a 192×192 PNG); discovery does not fetch it. */
  icon?: string;
  support?: string | Record<string, string>;
}

/** A capability as an ABP manifest lists it (the app's own claim, until `initialize` confirms it). */
export interface AbpManifestCapability {
  name: string;
  description?: string;
  inputSchema?: JsonSchema | boolean;
  outputSchema?: JsonSchema | boolean;
  experimental?: boolean;
  deprecated?: boolean;
}

/** The manifest an ABP app serves at its `<link rel="abp-manifest" href="…">`. */
export interface AbpManifest {
  /** The ABP version, `major.minor`. */
  abp: string;
  app: AbpManifestApp;
  capabilities: AbpManifestCapability[];
}

/** What `window.abp.initialize` resolves to: the session, or `{ error }` (NOT_SUPPORTED for another major
 * protocol version). Narrows on `error`: `if (r.error) …; else r.sessionId`. */
export type InitializeResult = InitializeSession | InitializeRefused;

export interface InitializeSession {
  sessionId: string;
  protocolVersion: string;
  app: AppInfo;
  capabilities: CapabilityDescriptor[];
  /** What was agreed: the features the agent enabled, plus `dynamicCapabilities`. */
  features: { notifications: boolean; progress: boolean; elicitation: boolean; dynamicCapabilities?: boolean };
  error?: undefined;
}

export interface InitializeRefused {
  error: ABPError;
  sessionId?: undefined;
  protocolVersion?: undefined;
  app?: undefined;
  capabilities?: undefined;
  features?: undefined;
}

export interface InitializeParams {
  agent?: AgentInfo;
  protocolVersion?: string;
  /** Turn off what the agent does not want: no progress messages, notifications or elicitations are sent. */
  features?: { notifications?: boolean; progress?: boolean; elicitation?: boolean };
  requestedCapabilities?: string[];
  /** Which elicitation methods the agent answers (others resolve NOT_SUPPORTED in the app). */
  agentCapabilities?: { allowedRequests?: string[] };
}

/** `window.abp`, installed by `app.exposeGlobal()` for Puppeteer/Playwright agents (a session of its own),
 * as the ABP API reference types it. Reports through `window.__abp_progress`, `__abp_notification`,
 * `__abp_elicitation` (its return value is the answer) and `__abp_capabilities_changed` when the automation
 * client exposed them, and through the registrars. */
export interface AbpGlobal {
  readonly protocolVersion: string;
  readonly app: AppInfo;
  readonly initialized: boolean;
  readonly sessionId: string | null;
  /** Starts a session. On a page whose session is active, ends it (its calls resolve cancelled) and starts
   * a new one. */
  initialize(params?: InitializeParams): Promise<InitializeResult>;
  shutdown(params?: { reason?: string } | string): Promise<void>;
  /** `timeout` (ms) is enforced by the page: the call is cancelled and resolves TIMEOUT (retryable). */
  call<T = unknown>(capability: string, params?: unknown, options?: { callId?: string; timeout?: number; progressToken?: string }): Promise<ABPResponse<T>>;
  cancel(callId: string, reason?: string): Promise<CancelResponse>;
  cancel(request: { callId: string; reason?: string }): Promise<CancelResponse>;
  listCapabilities(): Promise<CapabilityDescriptor[]>;
  describeCapability(name: string): Promise<CapabilityDescriptor | null>;
  supports(name: string): Promise<SupportInfo>;
  /** Whether an agent with notifications on was told. */
  notify(event: string, data?: unknown): boolean;
  /** Progress of a call (by `callId`, or `operationId` = its progress token) or of another operation. */
  notifyProgress(info: ProgressInfo & ({ callId: string } | { operationId: string })): void;
  elicit(request: ElicitationRequest): Promise<ElicitationResponse>;
  /** Each returns a function that removes the callback. */
  onProgress(callback: (progress: ProgressInfo) => void): () => void;
  onNotification(callback: (notification: NotificationInfo) => void): () => void;
  onElicitation(callback: (request: ElicitationRequest) => ElicitationResponse | unknown | Promise<ElicitationResponse | unknown>): () => void;
  onCapabilitiesChanged(callback: (changes: CapabilityChanges) => void): () => void;
}

declare global {
  interface Window {
    /** Installed by the ABP bootstrap script (a placeholder whose calls wait) and `app.exposeGlobal()`. Typed
     * as present, as a page script that includes the bootstrap sees it; on a page with neither it is
     * `undefined` (test `'abp' in window` where that can happen). */
    abp: AbpGlobal;
  }
}

export interface IframeOptions {
  targetOrigin: string;
  /** Wrap every message in the MCP-B envelope of this channel (`'mcp-iframe'` for `@mcp-b/transports`), with
   * its ready handshake. Without it, messages travel as they are (ABP envelopes, or bare JSON-RPC for MCP).
   * The MCP dialect's framing: the role builds (`abp-wasm/agent`, `abp-wasm/app`) speak ABP only and throw a
   * TypeError for it. */
  channel?: string;
}
export interface WindowOptions { targetOrigin: string; channel?: string }
export interface ParentOptions {
  allowedOrigins?: string[];
  /** The MCP-B channel (`'mcp-iframe'`): the app announces `'mcp-server-ready'` to the allowed origins and
   * answers `'mcp-check-ready'`, as `@mcp-b/transports`' `IframeChildTransport` does. */
  channel?: string;
}

export interface WebSocketOptions {
  /** Subprotocols offered in the handshake. */
  protocols?: string | string[];
  /** Largest frame, in UTF-8 bytes, either way (default 16 MiB). A bigger outgoing message is not sent: the
   *  call resolves TRANSPORT_ERROR (or the handler's result becomes OPERATION_FAILED) and the socket stays
   *  open. A bigger incoming frame is dropped unread and counted in `ignoredMessages`. */
  maxMessageBytes?: number;
  /** Open a new socket after a drop, with exponential backoff (default off). Pending calls still resolve
   *  DISCONNECTED at the drop; a client then starts a new session by itself. The first socket is retried the
   *  same way: `connect` resolves once one opens (a page opened before its server waits for it) and rejects
   *  when `maxAttempts` run out (never, by default). */
  reconnect?: boolean | { initialDelay?: number; maxDelay?: number; maxAttempts?: number };
}

/** ABP binary data: a file or blob of bytes with its type. Over postMessage every form travels as it is (structured
 *  clone). Over WebSocket, content given as bytes is sent as base64 (`encoding: 'base64'`, `size` set) keeping
 *  `mimeType`, `filename` and any other field, and a received BinaryData in base64 arrives with its `content` as
 *  an `ArrayBuffer` (and no `encoding`). Plain bytes (an `ArrayBuffer` or typed array anywhere in a payload) travel
 *  as `{ content, encoding: 'base64', mimeType: 'application/octet-stream', size }` and arrive as an `ArrayBuffer`. */
export interface BinaryData {
  /** base64 text (`encoding: 'base64'`), plain text (`'utf-8'`), or the bytes. A Blob cannot travel over WebSocket. */
  content: string | ArrayBuffer | ArrayBufferView | Blob;
  mimeType: string;
  encoding?: 'base64' | 'utf-8';
  /** Bytes of the decoded content. */
  size?: number;
  filename?: string;
}

/** Where to fetch a large result (over about 10 MB) instead of carrying it inline, as ABP describes it. */
export interface BinaryDataReference {
  downloadUrl: string;
  mimeType: string;
  size: number;
  filename?: string;
  /** When `downloadUrl` stops working (an ISO 8601 date-time, or Unix milliseconds). */
  expiresAt?: string | number;
  /** How to authenticate the download (for example `{ type: 'bearer', token }`), as the app describes it. */
  auth?: Record<string, unknown>;
}
"#;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(typescript_type = "CallOptions")]
    pub type CallOptions;
    #[wasm_bindgen(typescript_type = "ClientOptions")]
    pub type ClientOptions;
    #[wasm_bindgen(typescript_type = "AppInfo")]
    pub type AppInfo;
    #[wasm_bindgen(typescript_type = "AppOptions")]
    pub type AppOptions;
    #[wasm_bindgen(typescript_type = "ListenOptions")]
    pub type ListenOptions;
    #[wasm_bindgen(typescript_type = "WebMCPExposeOptions")]
    pub type WebMcpExposeOptions;
    #[wasm_bindgen(typescript_type = "CapabilityHandler")]
    pub type CapabilityHandler;
    #[wasm_bindgen(typescript_type = "CapabilityOptions")]
    pub type CapabilityOptions;
    #[wasm_bindgen(typescript_type = "IframeOptions")]
    pub type IframeOptions;
    #[wasm_bindgen(typescript_type = "WindowOptions")]
    pub type WindowOptions;
    #[wasm_bindgen(typescript_type = "ParentOptions")]
    pub type ParentOptions;
    #[wasm_bindgen(typescript_type = "WebSocketOptions")]
    pub type WebSocketOptions;
}
