// Runs a Python agent from an extension page (the popup, the options
// page). Python runs in a fresh sandbox frame and worker per run (nothing
// of one agent's run is left for the next); this page only relays: each
// restricted_api call becomes one agent-call the host decides, bound to
// the run python-run opened (the tab's document, the session level).
// The executionTimeout is enforced here by ending the worker.
import { host } from './host.js';

// A run's calls, the refused touches of absent functions included, are
// bounded as the host bounds them (maxPythonCalls): an agent that loops on
// a function it was not given ends with call_limit, not with thousands of
// denials.
const MAX_CALLS = 10000;

// How long Pyodide may take to load before the run gives up: loading is
// not the agent's time, so it is not counted against executionTimeout.
const LOAD_TIMEOUT_MS = 120000;

function randomToken() {
  const b = new Uint8Array(32);
  crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

// openSandbox makes the frame and returns a channel to it: messages are
// taken only from that frame's window and only with this run's token.
function openSandbox() {
  const token = randomToken();
  const frame = document.createElement('iframe');
  frame.src = 'sandbox.html';
  frame.hidden = true;
  frame.dataset.pythonSandbox = '';
  let onMessage = () => {};
  const listener = (e) => {
    if (e.source !== frame.contentWindow || !e.data || e.data.token !== token) return;
    onMessage(e.data);
  };
  window.addEventListener('message', listener);
  const loaded = new Promise((resolve) => frame.addEventListener('load', resolve, { once: true }));
  document.body.append(frame);
  return {
    loaded,
    send: (msg) => frame.contentWindow?.postMessage({ ...msg, token }, '*'),
    on: (fn) => { onMessage = fn; },
    close() {
      frame.contentWindow?.postMessage({ type: 'terminate', token }, '*');
      window.removeEventListener('message', listener);
      frame.remove();
    },
    token,
  };
}

// runPython runs agentId on the tab (tabId may be undefined: an unbound
// run, whose page calls are refused: no tab) in session sessionId ('' or
// undefined: a fresh one). onOutput gets text as it comes; onDenial each
// refused call. It resolves to {status, output, code, error, timings,
// sessionId}.
export async function runPython({ agentId, input, tabId, sessionId = '', onOutput = () => {}, onDenial = () => {} }) {
  const t0 = performance.now();
  const timings = {};
  let output = '';
  const out = (text) => { output += text; onOutput(text); };
  const box = openSandbox();
  const watch = chrome.runtime.connect({ name: 'python-run' });
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  let run = null;
  let timer = null;
  let phase = 'loading';
  let calls = 0;
  const absentTouches = new Map(); // name -> times touched
  // counted is false once the run passed MAX_CALLS, which ends it.
  const counted = () => {
    if (++calls <= MAX_CALLS) return true;
    finish({ status: 'call_limit', error: `the run made more than ${MAX_CALLS} calls` });
    return false;
  };

  box.on(async (msg) => {
    switch (msg.type) {
      case 'loaded': // the worker module is listening
        box.send({ type: 'init' });
        break;
      case 'ready':
        timings.loadMs = Math.round(performance.now() - t0);
        timings.pyodideLoadMs = msg.loadMs;
        timings.memoryBytes = msg.memory;
        phase = 'ready';
        start();
        break;
      case 'output':
        out(String(msg.text ?? ''));
        break;
      case 'call': {
        if (!counted()) break;
        const t = performance.now();
        const r = await host('agent-call', { runId: run?.runId, agentId, operation: String(msg.name), params: msg.params || {} });
        timings.lastCallMs = performance.now() - t;
        if (!r?.success) onDenial({ permission: msg.name, code: r?.code, context: { reason: r?.error } });
        box.send({ type: 'result', id: msg.id, reply: r?.success ? { ok: true, data: r.data } : { ok: false, code: r?.code, error: r?.error } });
        break;
      }
      case 'absent': {
        const perm = run?.absent?.[msg.name];
        if (!perm || !counted()) break;
        // Shown and recorded once per name per run, with how many times
        // (absentDenial, when the run ends).
        const n = (absentTouches.get(msg.name) || 0) + 1;
        absentTouches.set(msg.name, n);
        if (n === 1) onDenial(absentDenial(msg.name, perm, 1));
        break;
      }
      case 'done':
        finish({ status: msg.status, error: msg.error, runMs: msg.runMs });
        break;
      case 'fatal':
        finish({ status: 'internal_error', error: msg.error });
        break;
    }
  });

  function absentDenial(name, perm, n) {
    return { agentId, permission: perm, code: 'import_not_granted',
      context: { reason: `restricted_api.${name} needs ${perm}, which the agent was not granted${n > 1 ? ` (touched ${n} times in this run)` : ''}`,
        details: { import: `restricted_api.${name}`, count: String(n) } } };
  }

  async function start() {
    const r = await host('python-run', { agentId, input, tabId, sessionId });
    if (!r?.success) {
      finish({ status: r?.code || 'internal_error', error: r?.error, code: r?.code });
      return;
    }
    run = r.data;
    // While the run is open, the service worker holds its end: this page
    // closing ends the run in the host (router.js, portHandlers).
    watch.postMessage({ runId: run.runId, agentId });
    phase = 'running';
    timings.startedAt = performance.now();
    timer = setTimeout(() => finish({ status: 'timeout', error: `the agent ran longer than its executionTimeout of ${run.executionTimeout} ms and was stopped` }),
      run.executionTimeout);
    box.send({ type: 'run', source: run.source, api: run.api, absent: Object.keys(run.absent || {}), input: run.input, maxMemory: run.maxMemory,
      timeoutMs: run.executionTimeout });
  }

  await box.loaded;
  box.send({ type: 'open' });
  const loadTimer = setTimeout(() => { if (phase === 'loading') finish({ status: 'timeout', error: 'Pyodide did not load in time' }); }, LOAD_TIMEOUT_MS);
  const res = await finished;
  clearTimeout(loadTimer);
  clearTimeout(timer);
  box.close();
  if (timings.startedAt) timings.runMs = Math.round(performance.now() - timings.startedAt);
  delete timings.startedAt;
  timings.totalMs = Math.round(performance.now() - t0);
  // One record per absent function touched, with its count.
  await Promise.all([...absentTouches].map(([name, n]) => host('log-denial', absentDenial(name, run.absent[name], n))));
  watch.postMessage({ ended: true });
  watch.disconnect();
  if (run) await host('python-run-end', { runId: run.runId, agentId, status: res.status });
  const status = res.status;
  return { status, output, code: status === 'ok' ? undefined : (res.code || status), error: res.error, timings, sessionId: run?.sessionId };
}
