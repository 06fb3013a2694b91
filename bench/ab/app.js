// The app the A/B pages serve in an iframe: build `v` (a copy of pkg/ under bench/ab/, or `pkg` for pkg/ itself)
// answering `echo` to its parent; `mcp`: in the MCP dialect, in the MCP-B envelope.
export async function serveApp(v, mcp = false) {
  const { default: init, AbpApp, PostMessageTransport } = await import(v === 'pkg' ? '../../pkg/abp_wasm.js' : `./${v}/abp_wasm.js`);
  await init();
  const app = new AbpApp({ id: 'bench', name: 'bench', version: '1' });
  app.register('echo', (x) => x);
  app.listen(PostMessageTransport.toParent({ allowedOrigins: [location.origin], ...(mcp ? { channel: 'mcp-iframe' } : {}) }),
    mcp ? { dialect: 'mcp' } : undefined);
}
