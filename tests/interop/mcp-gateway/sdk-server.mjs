// The baseline for the gateway's figures: the official MCP SDK 2 server (`@modelcontextprotocol/server`, pinned in
// ../package.json) on stdio, dual-era through its own `serveStdio`, with one `echo` tool and one `slow` tool that
// reports when its signal aborts (on stderr, as `aborted <tag> <epoch ms>`). run.mjs spawns it with the SDK 2 client.
import { McpServer } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { z } from 'zod';

const epochMs = () => performance.timeOrigin + performance.now();

serveStdio(() => {
  const server = new McpServer({ name: 'sdk-baseline', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('echo', { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: 'text', text: JSON.stringify({ text }) }],
    structuredContent: { text },
  }));
  server.registerTool('slow', { inputSchema: z.object({ tag: z.string() }) }, async ({ tag }, ctx) => {
    const signal = ctx?.mcpReq?.signal ?? ctx?.signal;
    await new Promise((resolve) => {
      signal?.addEventListener('abort', () => {
        process.stderr.write(`aborted ${tag} ${epochMs()}\n`);
        resolve();
      });
    });
    return { content: [{ type: 'text', text: 'stopped' }] };
  });
  return server;
});
