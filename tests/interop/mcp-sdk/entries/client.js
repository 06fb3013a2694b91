// What a host page (the MCP client side) needs, bundled by ../../build.mjs into ../dist/client.js.
// Everything here is the official code, re-exported unchanged.
export { Client } from '@modelcontextprotocol/sdk/client/index.js';
export { WebSocketClientTransport } from '@modelcontextprotocol/sdk/client/websocket.js';
export { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
export {
  McpError,
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  CallToolResultSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
  ProgressNotificationSchema,
  LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
// @mcp-b/transports 4.0.0 and ext-apps 1.7.5, the last releases on SDK 1 (npm aliases in ../../package.json).
export { IframeParentTransport } from 'mcp-b-transports-v4';
// Bare JSON-RPC objects over postMessage, no envelope and no handshake (MCP Apps' transport).
export { PostMessageTransport as ExtAppsPostMessageTransport } from 'ext-apps-v1';
