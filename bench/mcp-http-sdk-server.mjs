// The baseline of `npm run bench:mcp-http`, in a process of its own: the official SDK 2 server
// (`@modelcontextprotocol/server`, pinned in tests/interop) serving `echo` and `slow` statelessly over HTTP through
// its `createMcpHandler` on a Node HTTP server. Prints `listening PORT`, and `aborted TAG EPOCH_MS` when a slow
// call's signal aborts, on stderr.
import http from 'node:http';

const modules = new URL('../tests/interop/node_modules/', import.meta.url);
const { McpServer, createMcpHandler } = await import(new URL('@modelcontextprotocol/server/dist/index.mjs', modules));
const { z } = await import(new URL('zod/index.js', modules));
const epochMs = () => performance.timeOrigin + performance.now();

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'sdk-baseline', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.registerTool('echo', { inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
    content: [{ type: 'text', text: JSON.stringify({ text }) }], structuredContent: { text },
  }));
  server.registerTool('slow', { inputSchema: z.object({ tag: z.string() }) }, async ({ tag }, ctx) => {
    const signal = ctx?.mcpReq?.signal ?? ctx?.signal;
    await new Promise((resolve) => signal?.addEventListener('abort', () => {
      process.stderr.write(`aborted ${tag} ${epochMs()}\n`);
      resolve();
    }));
    return { content: [{ type: 'text', text: 'stopped' }] };
  });
  return server;
});
const server = http.createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  // The client going away aborts the request: that is how the SDK server learns that a stream closed.
  const gone = new AbortController();
  res.on('close', () => { if (!res.writableFinished) gone.abort(); });
  const request = new Request(`http://${req.headers.host}${req.url}`, {
    method: req.method, headers: req.headers, signal: gone.signal,
    body: ['GET', 'HEAD'].includes(req.method) ? undefined : Buffer.concat(chunks),
  });
  const response = await handler.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  try {
    if (response.body) for await (const chunk of response.body) res.write(chunk);
  } catch { /* the client went away */ }
  res.end();
});
server.listen(0, '127.0.0.1', () => process.stderr.write(`listening ${server.address().port}\n`));
