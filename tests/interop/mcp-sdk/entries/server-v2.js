// What an iframe page running an official MCP SDK 2 server needs, bundled by ../../build.mjs into
// ../dist/server-v2.js. Everything here is the official code, re-exported unchanged.
export { McpServer, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
// The SDK's dual-era entry: it answers server/discover and 2026-07-28 requests with one server instance and an
// initialize with another. Despite its name it takes any Transport (`{ transport }`); without one it would use
// the process's stdio, which the browser build of the SDK does not have.
export { serveStdio } from '@modelcontextprotocol/server/stdio';
// @mcp-b/transports 5: the MCP-B envelope (it parses with its own copy of @modelcontextprotocol/core 2.0.0).
export { IframeChildTransport } from '@mcp-b/transports';
// ext-apps 2: bare JSON-RPC objects over postMessage, no envelope and no handshake (MCP Apps' transport).
export { PostMessageTransport as ExtAppsPostMessageTransport } from '@modelcontextprotocol/ext-apps';
export { z } from 'zod';
