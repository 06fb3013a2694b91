// What a build does with messages meant for the other role, sent by a hand-written peer over a MessageChannel:
// the role builds leave those messages unread, and must answer and count exactly as the full build does
// (scripts/consumer.mjs compares the two). Each probe returns what the peer saw posted back and the build's
// `ignoredMessages` counter.

const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

/** Messages only an agent acts on, well-formed and not, and one of no known type. */
const FOR_AGENTS = [
  { type: 'initialize-result', id: 'late', timestamp: 1, payload: { sessionId: 'S2' } },
  { type: 'capabilities/call-result', id: 'r1', timestamp: 1, payload: { callId: 'x', success: true, data: 1 } },
  { type: 'capabilities/cancel-result', id: 'r2', timestamp: 1, payload: { callId: 'x', cancelled: true } },
  { type: 'progress', timestamp: 1, payload: { callId: 'x', progress: 1 } },
  { type: 'notification', timestamp: 1, payload: { event: 'hello', data: {} } },
  { type: 'notification', timestamp: 1, payload: {} },
  { type: 'notifications/capabilities/list_changed', timestamp: 1, payload: {} },
  { type: 'elicitation/request', id: 'q1', timestamp: 1, payload: { callId: 'x', method: 'confirm' } },
  { type: 'elicitation/request', timestamp: 1, payload: {} },
  { type: 'no/such-type', id: 'u1', timestamp: 1, payload: {} },
];

/** Messages only an app acts on, well-formed and not, and one of no known type. */
const FOR_APPS = [
  { type: 'initialize', id: 'i2', timestamp: 1, payload: { agent: { name: 'other', version: '1' } } },
  { type: 'initialize', timestamp: 1, payload: {} },
  { type: 'capabilities/call', id: 'c1', timestamp: 1, payload: { callId: 'x', capability: 'add', params: {} } },
  { type: 'capabilities/call', id: 'c2', timestamp: 1, payload: {} },
  { type: 'capabilities/call', id: 'c3', timestamp: 1 },
  { type: 'elicitation/response', id: 'e1', timestamp: 1, payload: { success: true, data: 1 } },
  { type: 'elicitation/response', timestamp: 1, payload: {} },
  { type: 'no/such-type', id: 'u2', timestamp: 1, payload: {} },
];

/** A connected `AbpClient` (agent side) gets the app-bound messages. */
export async function probeAgent(AbpClient, PostMessageTransport) {
  const { port1, port2 } = new MessageChannel();
  const posted = [];
  port2.onmessage = (e) => {
    const m = e.data;
    posted.push(m.type);
    if (m.type === 'initialize') {
      port2.postMessage({ type: 'initialize-result', id: m.id, timestamp: Date.now(), payload: { sessionId: 'S',
        protocolVersion: '0.1', app: { id: 'probe', name: 'probe', version: '1' }, capabilities: [] } });
    }
  };
  const client = await AbpClient.connect(PostMessageTransport.fromPort(port1), { agent: { name: 'probe', version: '1' } });
  for (const m of FOR_APPS) port2.postMessage(m);
  await settle();
  const seen = { ignored: client.ignoredMessages, connected: client.connected, posted };
  port1.close();
  port2.close();
  return seen;
}

/** An `AbpApp` with an open session gets the agent-bound messages. */
export async function probeApp(AbpApp, PostMessageTransport) {
  const { port1, port2 } = new MessageChannel();
  const posted = [];
  port1.onmessage = (e) => posted.push(e.data.type);
  const app = new AbpApp({ id: 'probe', name: 'probe', version: '1' });
  app.register('add', ({ a, b }) => a + b);
  app.listen(PostMessageTransport.fromPort(port2));
  port1.postMessage({ type: 'initialize', id: 'i1', timestamp: Date.now(), payload: { agent: { name: 'probe', version: '1' },
    protocolVersion: '0.1' } });
  await settle();
  for (const m of FOR_AGENTS) port1.postMessage(m);
  await settle();
  const seen = { ignored: app.ignoredMessages, active: app.activeCalls, posted };
  app.close();
  port1.close();
  return seen;
}
