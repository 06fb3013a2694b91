// A MessagePort as the ACP SDK's `Stream`: `{ readable: ReadableStream<object>, writable: WritableStream<object> }`
// of JSON-RPC message objects (core/stream.d.ts:13 in @agentclientprotocol/sdk 2.4.0). The SDK's Connection writes
// one message object per write() and reads one per read(); ndJsonStream is only its byte framing for stdio.
//
// Wire format here: one JSON-RPC object per postMessage, no envelope, no handshake. Outgoing messages go through
// JSON.parse(JSON.stringify(m)) first (unless { clone: false }), so the other side gets exactly what a JSON
// transport would carry: the SDK builds errors as { code, message, data: undefined } (core/jsonrpc.js:971-989),
// and structured clone would keep that `data` key while JSON drops it.
// Incoming: objects are passed through as they are; a string is parsed as JSON (if that fails the string itself is
// passed on, and the SDK answers -32600 with id null, core/jsonrpc.js:595-599).
//
//   const stream = portStream(port, { tap: (dir, msg) => log.push({ dir, msg }) });
//   agent().onRequest(...).connect(stream);
//   stream.end();   // ends the readable: the SDK connection closes and rejects what is pending
export function portStream(port, { tap, clone = true } = {}) {
  let controller;
  let ended = false;
  const onMessage = (e) => {
    if (ended) return;
    let msg = e.data;
    if (typeof msg === 'string') {
      try { msg = JSON.parse(msg); } catch { /* handed on as is: the SDK answers -32600 */ }
    }
    tap?.('in', msg);
    controller.enqueue(msg);
  };
  const readable = new ReadableStream({
    start(c) {
      controller = c;
      port.addEventListener('message', onMessage);
      port.start();
    },
    cancel() { end(); },
  });
  const writable = new WritableStream({
    write(msg) {
      if (ended) throw new Error('port stream ended');
      const out = clone ? JSON.parse(JSON.stringify(msg)) : msg;
      tap?.('out', out);
      port.postMessage(out);
    },
    close() { end(); },
    abort() { end(); },
  });
  function end() {
    if (ended) return;
    ended = true;
    port.removeEventListener('message', onMessage);
    try { controller.close(); } catch { /* already closed or cancelled */ }
    port.close();
  }
  return { readable, writable, end };
}
