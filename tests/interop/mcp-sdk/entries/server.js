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
export { IframeChildTransport } from '@mcp-b/transports';
export { z } from 'zod';
// Bare JSON-RPC objects over postMessage, no envelope and no handshake (MCP Apps' transport).
export { PostMessageTransport as ExtAppsPostMessageTransport } from '@modelcontextprotocol/ext-apps';
