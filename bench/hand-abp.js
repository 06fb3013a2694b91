// ABP written by hand, as the bench pages' counterparts of abp-wasm's two sides: the wire format with no library,
// what an SDK's own work is measured against (bench/frame.html, bench/mix.mjs, bench/own-work.mjs,
// bench/envelope.html).

/** A `capabilities/call` whose id is also its callId. */
export function callMessage(id, capability, params) {
  return { type: 'capabilities/call', id, timestamp: Date.now(), payload: { callId: id, capability, params } };
}

/** An `initialize` from an agent written by hand (the port it offers goes in the transfer list). */
export function initializeMessage(id) {
  return { type: 'initialize', id, timestamp: Date.now(), payload: { agent: { name: 'hand', version: '1' }, protocolVersion: '0.1', features: {} } };
}

/** The app side on `port`: answers every `capabilities/call` with its params. */
export function echoCalls(port) {
  port.onmessage = (ev) => {
    const m = ev.data;
    const t0 = performance.now();
    port.postMessage({ type: 'capabilities/call-result', id: m.id, timestamp: Date.now(),
      payload: { success: true, data: m.payload.params, metadata: { duration: performance.now() - t0 }, callId: m.payload.callId } });
  };
}

/** The app side in a frame, as an agent of this SDK finds it: answers the `initialize` that offers a port on that
 *  port, then echoes calls on it. */
export function serveHandApp() {
  addEventListener('message', (e) => {
    const m = e.data;
    if (e.source !== parent || m?.type !== 'initialize' || !e.ports[0]) return;
    const port = e.ports[0];
    echoCalls(port);
    port.postMessage({ type: 'initialize-result', id: m.id, timestamp: Date.now(), payload: { sessionId: 'hand', protocolVersion: '0.1',
      app: { id: 'hand', name: 'hand', version: '1' }, capabilities: [{ name: 'echo', available: true, requirements: [], features: {} }], features: {} } });
  });
}

/** The agent side for the app in `iframe`: offers a port with `initialize`, then calls over it. */
export async function handAgent(iframe) {
  const { port1, port2 } = new MessageChannel();
  const pending = new Map();
  port1.onmessage = (e) => { const m = e.data; const r = pending.get(m.id); pending.delete(m.id); r(m.payload); };
  const ready = new Promise((resolve) => pending.set('init', resolve));
  iframe.contentWindow.postMessage(initializeMessage('init'), location.origin, [port2]);
  await ready;
  return { call: (capability, params) => new Promise((resolve) => {
    const id = crypto.randomUUID();
    pending.set(id, resolve);
    port1.postMessage(callMessage(id, capability, params));
  }) };
}
