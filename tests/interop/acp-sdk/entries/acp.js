// What a browser page running either ACP role needs, bundled by ../../build.mjs into ../dist/acp.js.
// Everything from the SDK is its own code, re-exported unchanged (the stable v1 entry point, `@agentclientprotocol/sdk`):
// agent(), client(), AgentApp, ClientApp, AgentContext, ClientContext, methods, RequestError, ndJsonStream,
// PROTOCOL_VERSION, AGENT_METHODS, CLIENT_METHODS, PROTOCOL_METHODS, ... (2.4 has no ClientSideConnection /
// AgentSideConnection any more: see ../WIRE.md section 1).
export * from '@agentclientprotocol/sdk';
// zod, as the SDK itself uses it: a zod schema is a valid params parser for onRequest(method, parser, handler).
export { z } from 'zod';
// Ours: a MessagePort as the SDK's Stream (one JSON-RPC object per postMessage).
export { portStream } from '../port-stream.js';
