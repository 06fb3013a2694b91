// What a host page (the MCP client side) needs from the official MCP SDK 2 and the browser transports built on it,
// bundled by ../../build.mjs into ../dist/client-v2.js. Everything here is the official code, re-exported unchanged.
export { Client, ProtocolError, ProtocolErrorCode, SdkError, SdkErrorCode } from '@modelcontextprotocol/client';
// @mcp-b/transports 5: the MCP-B envelope (it parses with its own copy of @modelcontextprotocol/core 2.0.0).
export { IframeParentTransport } from '@mcp-b/transports';
// ext-apps 2: bare JSON-RPC objects over postMessage, no envelope and no handshake (MCP Apps' transport).
export { PostMessageTransport as ExtAppsPostMessageTransport } from '@modelcontextprotocol/ext-apps';
