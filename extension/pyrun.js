// Runs Python agents in the offscreen document (pyhost.js), which the
// service worker owns, so a run does not depend on the popup or options
// page that asked for it. Each run gets a sandbox frame and worker of its
// own, used for that run only and then ended (nothing of one agent's run
// is left for the next); to start fast, one sandbox is kept loaded ahead
// of time (the pool of one below), its worker holding a fresh Pyodide that
// no agent has touched. This document only relays: each restricted_api
// call becomes one agent-call the host decides, bound to the run
// python-run opened (the tab's document, the session level). The
// executionTimeout is enforced here, and in the sandbox, by ending the
// worker.
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

let serial = 0;

// openSandbox makes a frame, starts its worker loading Pyodide, and returns
// a channel to it: messages are taken only from that frame's window and
// only with its token (fresh per sandbox, so per run). ready resolves once
// Pyodide is loaded ({loadMs, memory, jspi}), or rejects.
export function openSandbox() {
  const token = randomToken();
  const frame = document.createElement('iframe');
  frame.src = 'sandbox.html';
  frame.hidden = true;
  frame.dataset.pythonSandbox = '';
  let onMessage = () => {};
  let readyResolve;
  let readyReject;
  const ready = new Promise((resolve, reject) => { readyResolve = resolve; readyReject = reject; });
  ready.catch(() => {}); // seen by whoever takes the sandbox
  const t0 = performance.now();
  const listener = (e) => {
    if (e.source !== frame.contentWindow || !e.data || e.data.token !== token) return;
    const msg = e.data;
    if (msg.type === 'loaded') box.send({ type: 'init' }); // the worker module is listening
    else if (msg.type === 'ready') {
      box.loaded = true;
      readyResolve({ loadMs: msg.loadMs, sinceOpenMs: Math.round(performance.now() - t0), memory: msg.memory, jspi: msg.jspi });
    }
    else if (msg.type === 'fatal' && !box.running) readyReject(new Error(String(msg.error)));
    else onMessage(msg);
  };
  window.addEventListener('message', listener);
  const box = {
    id: ++serial,
    ready,
    loaded: false, // Pyodide is loaded: a run taking this sandbox starts warm
    running: false,
    send: (msg) => frame.contentWindow?.postMessage({ ...msg, token }, '*'),
    on: (fn) => { onMessage = fn; },
    close() {
      readyReject(new Error('the sandbox was closed'));
      frame.contentWindow?.postMessage({ type: 'terminate', token }, '*');
      window.removeEventListener('message', listener);
      frame.remove();
    },
  };
  frame.addEventListener('load', () => box.send({ type: 'open' }), { once: true });
  document.body.append(frame);
  return box;
}

// The pool of one: a sandbox whose Pyodide is loaded (or loading) and that
// no run has had. take() hands it out, or a new one when there is none;
// after each run warmUp() loads the next, and the popup asks for one as it
// opens (python-warm), so a run usually finds one ready.
let spare = null;

export function warmUp() {
  if (spare) return spare.ready;
  const box = openSandbox();
  spare = box;
  box.ready.catch(() => { if (spare === box) { spare = null; box.close(); } });
  return box.ready;
}

function take() {
  const box = spare || openSandbox();
  spare = null;
  return box;
}

// poolState says whether a run asked now would start warm.
export function poolState() {
  if (!spare) return 'empty';
  return spare.loaded ? 'ready' : 'loading';
}

// runPython runs agentId on the tab (tabId may be undefined: an unbound
// run, whose page calls are refused: no tab) in session sessionId ('' or
// undefined: a fresh one). onOutput gets text as it comes; onDenial each
// refused call; onStarted the moment the agent's code starts; ref is the
// service worker's name for the run (its Stop stops the run's calls there,
// browser.js). stop(), when the returned handle's is called, ends the run
// as cancelled. It resolves to {status, output, code, error, timings,
// sessionId}.
export function runPython({ ref, agentId, input, tabId, sessionId = '', onOutput = () => {}, onDenial = () => {}, onStarted = () => {} }) {
  let finish;
  const finished = new Promise((resolve) => { finish = resolve; });
  const done = run({ ref, agentId, input, tabId, sessionId, onOutput, onDenial, onStarted, finish, finished });
  return { done, stop: () => finish({ status: 'cancelled', error: 'the run was stopped' }) };
}

async function run({ ref, agentId, input, tabId, sessionId, onOutput, onDenial, onStarted, finish, finished }) {
  const t0 = performance.now();
  const warm = poolState() === 'ready';
  const box = take();
  box.running = true;
  const timings = { warm, sandbox: box.id };
  let output = '';
  const out = (text) => { output += text; onOutput(text); };
  // While the run is open, the service worker holds its end: this
  // document closing ends the run in the host (router.js, portHandlers).
  const watch = chrome.runtime.connect({ name: 'python-run' });
  let run = null;
  let timer = null;
  // The executionTimeout's clock: it stands still while calls of the run
  // wait for a person (pauses nest), and the sandbox's with it.
  const clock = {
    left: 0, since: 0, held: 0,
    start(ms) {
      this.left = ms;
      this.run();
    },
    run() {
      this.since = performance.now();
      timer = setTimeout(() => finish({ status: 'timeout', error: `the agent ran longer than its executionTimeout of ${run.executionTimeout} ms and was stopped` }),
        Math.max(0, this.left));
    },
    pause() {
      if (this.held++ > 0 || timer === null) return;
      clearTimeout(timer);
      timer = null;
      this.left -= performance.now() - this.since;
      box.send({ type: 'pause' });
    },
    resume() {
      if (this.held === 0 || --this.held > 0 || closed) return;
      box.send({ type: 'resume' });
      this.run();
    },
  };
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
      case 'started':
        timings.startMs = Math.round(performance.now() - t0);
        onStarted(timings.startMs);
        break;
      case 'output':
        out(String(msg.text ?? ''));
        break;
      case 'call': {
        if (!counted()) break;
        const t = performance.now();
        // A call that waits for a person stops the run's clock, here and
        // in the sandbox, until the person has answered (the host says
        // so on the call: "waiting", then "resumed").
        let held = false;
        const onEvent = (ev) => {
          if (ev.event === 'waiting' && !held) {
            held = true;
            clock.pause();
          } else if (ev.event === 'resumed' && held) {
            held = false;
            clock.resume();
          }
        };
        const r = await host('agent-call', { runId: run?.runId, agentId, operation: String(msg.name), params: msg.params || {} }, onEvent);
        if (held) clock.resume();
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
    let loaded;
    try {
      loaded = await box.ready;
    } catch (e) {
      finish({ status: 'internal_error', error: `Pyodide did not load: ${e.message || e}` });
      return;
    }
    timings.loadMs = Math.round(performance.now() - t0);
    timings.pyodideLoadMs = loaded.loadMs;
    timings.memoryBytes = loaded.memory;
    timings.jspi = loaded.jspi;
    const r = await host('python-run', { agentId, input, tabId, sessionId, runRef: ref });
    if (!r?.success) {
      finish({ status: r?.code || 'internal_error', error: r?.error, code: r?.code });
      return;
    }
    if (closed) {
      // Stopped while python-run was on its way: the run is ended at once.
      host('python-run-end', { runId: r.data.runId, agentId, status: 'cancelled' });
      return;
    }
    run = r.data;
    watch.postMessage({ runId: run.runId, agentId });
    timings.startedAt = performance.now();
    clock.start(run.executionTimeout);
    box.send({ type: 'run', agentId, source: run.source, api: run.api, absent: Object.keys(run.absent || {}), input: run.input, maxMemory: run.maxMemory,
      timeoutMs: run.executionTimeout });
  }

  let closed = false;
  finished.then(() => { closed = true; });
  const loadTimer = setTimeout(() => { if (!run) finish({ status: 'timeout', error: 'Pyodide did not load in time' }); }, LOAD_TIMEOUT_MS);
  start();
  const res = await finished;
  clearTimeout(loadTimer);
  clearTimeout(timer);
  box.close();
  // The next run's sandbox is loaded now, after this run: loaded while it
  // ran, it took the two cores from the agent (its calls were ten times
  // slower in BenchmarkPythonAgent).
  warmUp();
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
