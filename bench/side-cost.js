// bench/side-cost.mjs's page: each side's own work per call, without the message channel (side-cost.mjs says how).
// ?args=[variants, evictMB]: the builds' directories (served paths) and the MB read between two messages;
// ?close=1: close the window once reported (bench/gecko-profile.mjs).
import { report, reportErrors } from './report.js';

reportErrors();

async function measure(variants, evictMB) {
  const perRound = evictMB ? 500 : 3000;
  const big = new Float64Array(evictMB * 131072);
  let sink = 0;
  const evict = () => { for (let i = 0; i < big.length; i += 8) sink += big[i]; };
  const callMessage = (id) => ({ type: 'capabilities/call', id, timestamp: Date.now(), payload: { callId: id, capability: 'echo', params: { a: 1 } } });
  const resultMessage = (m) => ({ type: 'capabilities/call-result', id: m.id, timestamp: Date.now(),
    payload: { success: true, data: m.payload.params, metadata: { duration: 0.01 }, callId: m.payload.callId } });
  const init = { type: 'initialize', id: 'init', timestamp: 1, payload: { agent: { name: 'cost', version: '1' }, protocolVersion: '0.1', features: {} } };
  const initResult = (id) => ({ type: 'initialize-result', id, timestamp: 1, payload: { sessionId: 's', protocolVersion: '0.1',
    app: { id: 'a', name: 'a', version: '1' }, capabilities: [{ name: 'echo', available: true, requirements: [], features: {} }], features: {} } });
  // A port whose postMessage only remembers the last message.
  const catching = (port) => { const box = {}; port.postMessage = (m) => { box.last = m; }; return box; };
  const apps = {}, agents = {};
  { // by hand: the app answers from its listener; the agent keeps a map of resolvers
    const appPort = new EventTarget(); const appBox = catching(appPort);
    appPort.addEventListener('message', (e) => { const m = e.data; const t0 = performance.now();
      appPort.postMessage({ type: 'capabilities/call-result', id: m.id, timestamp: Date.now(),
        payload: { success: true, data: m.payload.params, metadata: { duration: performance.now() - t0 }, callId: m.payload.callId } }); });
    apps.hand = { port: appPort, box: appBox };
    const agentPort = new EventTarget(); const agentBox = catching(agentPort); const pending = new Map();
    agentPort.addEventListener('message', (e) => { const m = e.data; const r = pending.get(m.id); pending.delete(m.id); r(m.payload); });
    agents.hand = { port: agentPort, box: agentBox, call: (capability, params) => new Promise((resolve) => {
      const id = crypto.randomUUID(); pending.set(id, resolve);
      agentPort.postMessage({ type: 'capabilities/call', id, timestamp: Date.now(), payload: { callId: id, capability, params } }); }) };
  }
  for (const v of variants) {
    const { default: initWasm, AbpApp, AbpClient, PostMessageTransport } = await import(`${v}/abp_wasm.js`);
    await initWasm();
    const appPort = new MessageChannel().port1; const appBox = catching(appPort);
    const app = new AbpApp({ id: 'cost', name: 'cost', version: '1' });
    app.register('echo', (x) => x);
    app.listen(PostMessageTransport.fromPort(appPort));
    appPort.dispatchEvent(new MessageEvent('message', { data: init }));
    if (appBox.last?.type !== 'initialize-result') throw new Error(`${v}: the app did not answer initialize`);
    apps[v] = { port: appPort, box: appBox };
    const agentPort = new MessageChannel().port1; const agentBox = catching(agentPort);
    const connecting = AbpClient.connect(PostMessageTransport.fromPort(agentPort), { agent: { name: 'cost', version: '1' } });
    agentPort.dispatchEvent(new MessageEvent('message', { data: initResult(agentBox.last.id) }));
    const abp = await connecting;
    agents[v] = { port: agentPort, box: agentBox, call: (c, p) => abp.call(c, p) };
  }
  const totals = {};
  let n = 0;
  for (let round = 0; round < 12; round++) {
    for (const [k, a] of Object.entries(apps)) {
      const events = Array.from({ length: perRound }, () => new MessageEvent('message', { data: callMessage(`id-${n++}`) }));
      const t0 = performance.now();
      for (const e of events) { a.port.dispatchEvent(e); if (evictMB) evict(); }
      const dt = performance.now() - t0;
      if (a.box.last?.payload?.callId !== events[perRound - 1].data.id) throw new Error(`app ${k} did not answer`);
      if (round >= 2) totals[`app: ${k}`] = (totals[`app: ${k}`] ?? 0) + dt;
    }
    for (const [k, a] of Object.entries(agents)) {
      const t0 = performance.now();
      for (let i = 0; i < perRound; i++) {
        const p = a.call('echo', { a: 1 });
        a.port.dispatchEvent(new MessageEvent('message', { data: resultMessage(a.box.last) }));
        if (!(await p).success) throw new Error(`agent ${k}: the call failed`);
        if (evictMB) evict();
      }
      if (round >= 2) totals[`agent: ${k}`] = (totals[`agent: ${k}`] ?? 0) + (performance.now() - t0);
    }
  }
  window.sink = sink;
  return Object.fromEntries(Object.entries(totals).map(([k, t]) => [k, (t / (10 * perRound)) * 1000]));
}

const query = new URLSearchParams(location.search);
const [variants, evictMB] = JSON.parse(query.get('args'));
await report(await measure(variants, evictMB));
// bench/gecko-profile.mjs: the profile is written when Firefox quits, which it does when its one window closes.
if (query.get('close')) window.close();
