// @mcp-b/webmcp-polyfill (pinned in ../../package.json), bundled for the WebMCP browser cases.
export { initializeWebMCPPolyfill, cleanupWebMCPPolyfill } from '@mcp-b/webmcp-polyfill';
