// What an iframe page running an MCP server needs, bundled by ../../build.mjs into ../dist/server.js.
// Everything here is the official code, re-exported unchanged.
export { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
export { Server } from '@modelcontextprotocol/sdk/server/index.js';
export {
  McpError,
  ErrorCode,
  LATEST_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  ElicitResultSchema,
} from '@modelcontextprotocol/sdk/types.js';
// @mcp-b/transports 4.0.0 and ext-apps 1.7.5, the last releases on SDK 1 (npm aliases in ../../package.json).
export { IframeChildTransport } from 'mcp-b-transports-v4';
export { z } from 'zod';
// Bare JSON-RPC objects over postMessage, no envelope and no handshake (MCP Apps' transport).
export { PostMessageTransport as ExtAppsPostMessageTransport } from 'ext-apps-v1';
