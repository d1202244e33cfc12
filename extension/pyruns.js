// The service worker's part in Python runs: it only wires. It also keeps
// the runs of modules (moduleruns.js) the same way, so a page follows a
// run whatever its language. A page asks for
// a run (python-start) and the run goes to the offscreen document
// (pyhost.js), which reports its progress back (python-progress); each
// report is passed on to every extension page as {type: 'python-event',
// ref, event}, and kept, so a popup opened again (Chrome closed it when a
// prompt took the focus) shows the run it started.
import { ensureOffscreen, isOffscreen } from './offdoc.js';
import { stopRun } from './browser.js';
import { moduleStop } from './moduleruns.js';

// The latest runs, by ref: {ref, agentId, output, denials, startMs, result}.
const KEEP = 8;
const MAX_KEPT_OUTPUT = (1 << 20) + 4096; // the worker cuts a run's output at 1 MiB
const runs = new Map();

const toOffscreen = (msg) => chrome.runtime.sendMessage({ ...msg, target: 'python' });
const bad = (error) => ({ success: false, code: 'bad_request', error });

export async function pythonStart(msg) {
  const ref = String(msg.ref || '');
  if (!/^[A-Za-z0-9-]{8,64}$/.test(ref) || runs.has(ref)) return bad('python-start needs a fresh ref');
  if (typeof msg.agentId !== 'string' || !msg.agentId) return bad('python-start needs an agentId');
  await ensureOffscreen();
  keepRun(ref, msg.agentId, 'python');
  return toOffscreen({ op: 'start', ref, agentId: msg.agentId, input: String(msg.input ?? ''),
    tabId: Number.isInteger(msg.tabId) ? msg.tabId : undefined, sessionId: String(msg.sessionId || '') });
}

export function pythonProgress(msg, sender) {
  if (!isOffscreen(sender)) return { success: false, code: 'permission_not_granted', error: 'only the offscreen document reports runs' };
  report(String(msg.ref), msg.event || {});
  return { success: true, data: {} };
}

// keepRun starts keeping the run ref of agentId; runtime is 'python' or
// 'wasm' (a module's run, moduleruns.js, kept the same way).
export function keepRun(ref, agentId, runtime) {
  runs.set(ref, { ref, agentId, runtime, output: '', denials: [], startMs: null, result: null });
  while (runs.size > KEEP) runs.delete(runs.keys().next().value);
}

// report keeps one event of the run ref and passes it on to every page
// as {type: 'python-event', ref, event} (the name is the older one: the
// events of a module's run go the same way).
export function report(ref, ev) {
  const run = runs.get(ref);
  if (run) {
    if (ev.kind === 'output' && run.output.length < MAX_KEPT_OUTPUT) run.output += String(ev.text ?? '');
    if (ev.kind === 'denial') run.denials.push(ev.denial);
    if (ev.kind === 'started') run.startMs = ev.startMs;
    if (ev.kind === 'end') run.result = ev.result;
  }
  chrome.runtime.sendMessage({ type: 'python-event', ref, event: ev }).catch(() => {});
}

// keptOutput is what the run ref printed so far.
export const keptOutput = (ref) => runs.get(String(ref))?.output || '';

// known says whether ref names a kept run.
export const known = (ref) => runs.has(String(ref));

export async function pythonStop(msg) {
  const run = runs.get(String(msg.ref));
  if (!run) return bad('no such run');
  if (run.runtime === 'wasm') return moduleStop(msg);
  // Before anything else: no call of the run is performed from here on,
  // whatever answer is on its way (browser.js, stopRun).
  stopRun(msg.ref);
  await ensureOffscreen();
  return toOffscreen({ op: 'stop', ref: String(msg.ref) });
}

// pythonRuns lists the kept runs, newest last, with what they printed.
export const pythonRuns = () => ({ success: true, data: { runs: [...runs.values()] } });

// pythonWarm has a Pyodide loaded ahead of the next run; pythonState says
// whether one is ready (the popup shows it; the tests wait on it).
export async function pythonWarm() {
  await ensureOffscreen();
  return toOffscreen({ op: 'warm' });
}

export async function pythonState() {
  await ensureOffscreen();
  return toOffscreen({ op: 'state' });
}
