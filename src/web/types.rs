//! The TypeScript surface: interfaces for every options object and result, and the duck-typed extern types
//! that let the exported functions name them (so the generated `.d.ts` has real types, not `any`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TS_TYPES: &'static str = r#"
/** An ABP error. `code` is one of the ABP error codes, or an app's own. */
export interface ABPError {
  code: 'NOT_INITIALIZED' | 'ALREADY_INITIALIZED' | 'UNKNOWN_CAPABILITY' | 'INVALID_PARAMS' | 'OPERATION_FAILED'
    | 'TIMEOUT' | 'CANCELLED' | 'DISCONNECTED' | 'TRANSPORT_ERROR' | 'RATE_LIMITED' | 'NOT_SUPPORTED'
    | 'PERMISSION_DENIED' | 'CAPABILITY_UNAVAILABLE' | (string & {});
  message: string;
  retryable: boolean;
  details?: unknown;
  retryAfter?: number;
  alternatives?: string[];
}

/** What every `call` resolves to. It never rejects for cancellation, timeouts or lost connections. */
export interface ABPResponse<T = unknown> {
  success: boolean;
  data?: T;
  error?: ABPError;
  metadata?: { duration: number };
  /** True when the call was cancelled (by your signal, a timeout, or `cancel`). */
  cancelled?: boolean;
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
}

export interface AgentInfo { name: string; version: string }
export interface AppInfo { id: string; name: string; version: string; description?: string }

export interface ClientOptions {
  agent: AgentInfo;
  /** How long to keep (re)sending `initialize` before giving up, ms (default 10000). */
  connectTimeout?: number;
  /** Default wait for a cancel to be answered before settling locally, ms (default 1000). */
  cancelGrace?: number;
  /** While calls are pending, ask an app that has been silent this long whether it is still there (ms; off by
   *  default). No answer within the same time resolves every pending call DISCONNECTED. For MessagePorts to
   *  workers and half-open sockets, which give no other sign. Keep it above the longest time the app's page
   *  may be blocked by synchronous work. */
  heartbeat?: number;
  onProgress?: (progress: ProgressInfo) => void;
  onNotification?: (notification: NotificationInfo) => void;
  onElicitation?: ElicitationHandler;
  onCapabilitiesChanged?: (capabilities: CapabilityDescriptor[]) => void;
}

export interface NotificationInfo { event: string; data?: unknown }

export interface CapabilityDescriptor {
  name: string;
  description?: string;
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  [extra: string]: unknown;
}

/** The subset of JSON Schema the app validates: type, required, properties, enum, minimum, maximum,
 * minLength, maxLength, items. */
export interface JsonSchema {
  type?: 'object' | 'array' | 'string' | 'number' | 'integer' | 'boolean' | 'null' | string[];
  required?: string[];
  properties?: Record<string, JsonSchema>;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  items?: JsonSchema;
  [extra: string]: unknown;
}

export interface SupportInfo { supported: boolean; available: boolean; reason?: string }

export interface ElicitationRequest { method: string; params?: unknown; timeout?: number; callId?: string }
export interface ElicitationResponse<T = unknown> { success: boolean; data?: T; error?: ABPError; cancelled?: boolean }
export type ElicitationHandler = (request: ElicitationRequest, options: { signal: AbortSignal })
  => ElicitationResponse | Promise<ElicitationResponse>;

/** What a capability handler receives besides its params. */
export interface CallContext {
  /** Aborts when the agent cancels the call (or the session ends). `signal.reason` is an AbortError
   * DOMException whose message is the agent's reason. */
  signal: AbortSignal;
  callId: string;
  progressToken?: string;
  /** Report progress. Cheap to call in a loop: updates are coalesced, and the last one is sent before the result. */
  progress(info: ProgressInfo | number): void;
  /** Ask the agent something; resolves `cancelled: true` if this call is cancelled first. */
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

export interface CapabilityOptions {
  description?: string;
  inputSchema?: JsonSchema;
  outputSchema?: JsonSchema;
  [extra: string]: unknown;
}

/** `window.abp`, installed by `app.exposeGlobal()` for Puppeteer/Playwright agents (a session of its own).
 * Reports through `window.__abp_progress`, `__abp_notification`, `__abp_elicitation` and
 * `__abp_capabilities_changed` when the automation client has exposed them. */
export interface AbpGlobal {
  readonly protocolVersion: string;
  readonly app: AppInfo;
  readonly initialized: boolean;
  readonly sessionId: string | null;
  initialize(params?: { agent?: AgentInfo; protocolVersion?: string; features?: Record<string, boolean> }): Promise<{
    sessionId?: string; protocolVersion?: string; app?: AppInfo; capabilities?: CapabilityDescriptor[]; error?: ABPError }>;
  shutdown(reason?: string): Promise<void>;
  call(capability: string, params?: unknown, options?: { callId?: string; timeout?: number; progressToken?: string }): Promise<ABPResponse>;
  cancel(callId: string, reason?: string): Promise<CancelResponse>;
  cancel(request: { callId: string; reason?: string }): Promise<CancelResponse>;
  listCapabilities(): CapabilityDescriptor[];
  describeCapability(name: string): CapabilityDescriptor | null;
  supports(name: string): SupportInfo;
  notify(event: string, data?: unknown): boolean;
  notifyProgress(info: ProgressInfo & { callId: string }): void;
  elicit(request: ElicitationRequest): Promise<ElicitationResponse>;
}

export interface IframeOptions { targetOrigin: string }
export interface WindowOptions { targetOrigin: string }
export interface ParentOptions { allowedOrigins?: string[] }

export interface WebSocketOptions {
  /** Subprotocols offered in the handshake. */
  protocols?: string | string[];
  /** Largest frame, in UTF-8 bytes, either way (default 16 MiB). A bigger outgoing message is not sent: the
   *  call resolves TRANSPORT_ERROR (or the handler's result becomes OPERATION_FAILED) and the socket stays
   *  open. A bigger incoming frame is dropped unread and counted in `ignoredMessages`. */
  maxMessageBytes?: number;
  /** Open a new socket after a drop, with exponential backoff (default off). Pending calls still resolve
   *  DISCONNECTED at the drop; a client then starts a new session by itself. */
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
