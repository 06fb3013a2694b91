// `WebMCPTransport.document()` (`link/webmcp.rs`): the page's WebMCP tools as an ABP app on the far side of a
// MessageChannel, a small adapter that turns the client's calls into `executeTool`. The client keeps none of
// its state here.

import { modelContext, reasonText } from '../value.js';

/** A WebMCP tool's answer (`executeTool`'s text: JSON of the value, a string as itself) as an `ABPResponse`'s
 *  fields: a CallToolResult with `isError` fails (its ABP error kept when it carries one), one with
 *  `structuredContent` gives that, any other value is the data. */
function responseOfTool(text) {
  let value;
  if (text === 'undefined' || text === undefined) value = undefined;
  else {
    try { value = JSON.parse(text); } catch { value = text; }
  }
  const isResult = value !== null && typeof value === 'object' && Array.isArray(value.content);
  if (isResult && value.isError === true) {
    const carried = value.structuredContent?.error;
    if (carried && typeof carried.code === 'string') return { success: false, error: carried };
    const message = value.content.find((c) => c?.type === 'text')?.text ?? 'The tool reported an error';
    return { success: false, error: { code: 'OPERATION_FAILED', message, retryable: false, details: { toolResult: value } } };
  }
  if (isResult && value.structuredContent !== undefined) return { success: true, data: value.structuredContent };
  return { success: true, data: value };
}

/** `WebMCPTransport.document()`: the client's end of a MessageChannel whose other end answers ABP as an app
 *  would, from the page's WebMCP tools: `initialize` and the capability list from `getTools()`, a call is
 *  `executeTool` with a signal that `capabilities/cancel` aborts, `toolchange` is
 *  `notifications/capabilities/list_changed`. Throws a TypeError at once without WebMCP. */
export function webmcpPort() {
  const mc = modelContext('WebMCPTransport.document()', true);
  // The polyfill wants the input as JSON text, native WebMCP as an object.
  const asText = mc.__isWebMCPPolyfill === true;
  const { port1, port2 } = new MessageChannel();
  let tools = new Map();
  let open = false;
  const running = new Map(); // callId → AbortController
  const send = (type, id, payload) => { port2.postMessage({ type, id, payload, timestamp: Date.now() }); };
  const descriptor = (t) => ({
    name: t.name,
    description: t.description ?? '',
    inputSchema: t.inputSchema ?? { type: 'object' },
    available: true,
    requirements: [],
    features: {},
    ...(t.annotations ? { annotations: t.annotations } : {}),
  });
  const same = (a, b) => JSON.stringify(descriptor(a)) === JSON.stringify(descriptor(b));
  const refresh = async () => {
    const list = await mc.getTools();
    const now = new Map(list.map((t) => [t.name, t]));
    const changes = {
      added: [...now.keys()].filter((n) => !tools.has(n)),
      removed: [...tools.keys()].filter((n) => !now.has(n)),
      changed: [...now.keys()].filter((n) => tools.has(n) && !same(tools.get(n), now.get(n))),
    };
    tools = now;
    return changes;
  };
  const onToolChange = async () => {
    if (!open) return;
    let c;
    try { c = await refresh(); } catch { return; }
    if (c.added.length || c.removed.length || c.changed.length) {
      send('notification', undefined, {
        event: 'notifications/capabilities/list_changed',
        data: { ...c, capabilities: [...tools.values()].map(descriptor) },
      });
    }
  };
  mc.addEventListener('toolchange', onToolChange);
  const call = async (id, p) => {
    const { callId, capability, params } = p ?? {};
    // Registered before anything is awaited, so a cancel that comes meanwhile finds it.
    const controller = new AbortController();
    running.set(callId, controller);
    const t0 = performance.now();
    let answer;
    try {
      if (!tools.has(capability)) await refresh();
      const tool = tools.get(capability);
      if (controller.signal.aborted) throw controller.signal.reason;
      if (!tool) {
        running.delete(callId);
        const error = { code: 'UNKNOWN_CAPABILITY', message: `No WebMCP tool is named '${capability}'`, retryable: false };
        send('capabilities/call-result', id, { callId, success: false, error });
        return;
      }
      const input = params === undefined ? {} : params;
      answer = responseOfTool(await mc.executeTool(tool, asText ? JSON.stringify(input) : input, { signal: controller.signal }));
    } catch (e) {
      answer = controller.signal.aborted
        ? { success: false, cancelled: true, error: { code: 'CANCELLED', message: reasonText(controller.signal), retryable: false } }
        : { success: false, error: { code: 'OPERATION_FAILED', message: e?.message || String(e), retryable: false, details: { name: e?.name } } };
    } finally {
      running.delete(callId);
    }
    send('capabilities/call-result', id, { callId, ...answer, metadata: { duration: performance.now() - t0 } });
  };
  port2.onmessage = async ({ data: m }) => {
    if (m === null || typeof m !== 'object') return;
    const p = m.payload;
    switch (m.type) {
      case 'initialize': {
        try {
          await refresh();
        } catch (e) {
          const error = { code: 'OPERATION_FAILED', message: `WebMCP's getTools() failed: ${e?.message ?? e}`, retryable: true };
          send('initialize-result', m.id, { error });
          break;
        }
        open = true;
        const app = { id: location.origin, name: document.title || location.host || 'WebMCP', version: '0' };
        send('initialize-result', m.id, {
          sessionId: `webmcp-${Math.random().toString(36).slice(2, 10)}`,
          protocolVersion: '0.1',
          app,
          capabilities: [...tools.values()].map(descriptor),
          features: { notifications: true, progress: false, elicitation: false },
        });
        break;
      }
      case 'capabilities/call':
        call(m.id, p);
        break;
      case 'capabilities/cancel': {
        const controller = running.get(p?.callId);
        if (controller) controller.abort(p?.reason ?? 'cancelled');
        send('capabilities/cancel-result', m.id, controller
          ? { callId: p?.callId, cancelled: true }
          : { callId: p?.callId, cancelled: false, reason: 'Operation not found' });
        break;
      }
      case 'shutdown':
        open = false;
        for (const c of running.values()) c.abort('shutdown');
        mc.removeEventListener('toolchange', onToolChange);
        port2.close();
        break;
      default:
    }
  };
  return port1;
}
