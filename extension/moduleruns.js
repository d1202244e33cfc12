// A WebAssembly agent's run, started from a page and held here, in the
// service worker, not by the page: the toolbar popup closes whenever a
// prompt takes the focus, and a run it held ended with it (the allowed
// write landed, the next call never reached the host, the output was
// gone). Here the run goes on, its events are kept and passed on as a
// Python run's are (pyruns.js: keepRun, report), and a popup opened
// again shows it. Stop (moduleStop) ends it: its calls are refused from
// that moment (browser.js, stopRun), and the host is asked to end it.
import { native } from './native.js';
import { bindTab, runToken, stopRun } from './browser.js';
import { keepRun, report, known, keptOutput } from './pyruns.js';
import { auditSoon } from './audit.js';

// The host request of each run in progress, by the page's ref.
const inflight = new Map();
const bad = (error) => ({ success: false, code: 'bad_request', error });

// moduleStart starts agentId on tabId in sessionId, and answers at once;
// the run's output, denials and end follow as events of ref.
export async function moduleStart(msg) {
  const ref = String(msg.ref || '');
  if (!/^[A-Za-z0-9-]{8,64}$/.test(ref) || known(ref)) return bad('module-start needs a fresh ref');
  if (typeof msg.agentId !== 'string' || !msg.agentId) return bad('module-start needs an agentId');
  keepRun(ref, msg.agentId, 'wasm');
  // Bound here to the document the tab holds now; the page names only
  // the tab (router.js says why). The token lets Stop win (browser.js).
  const bound = await bindTab(Number.isInteger(msg.tabId) ? msg.tabId : undefined);
  const params = { agentId: msg.agentId, input: String(msg.input ?? ''), sessionId: String(msg.sessionId || ''), ...bound,
    context: { ...bound.context, run: runToken(ref) } };
  const onEvent = (ev) => {
    if (ev.event === 'output') report(ref, { kind: 'output', text: String(ev.data?.text ?? '') });
    if (ev.event === 'denial') report(ref, { kind: 'denial', denial: ev.data || {} });
  };
  report(ref, { kind: 'started', startMs: Date.now() });
  native.request('run-agent', params, { onEvent, onSent: (id) => inflight.set(ref, id), timeoutMs: 660000 })
    .catch((e) => ({ success: false, code: e.code || 'internal_error', error: String(e.message || e) }))
    .then((r) => {
      inflight.delete(ref);
      auditSoon();
      const result = r.success
        ? { status: r.data.status, output: r.data.output, code: r.data.code, error: r.data.error, sessionId: r.data.sessionId }
        : { status: r.code, code: r.code, error: r.error, output: keptOutput(ref) };
      report(ref, { kind: 'end', result });
    });
  return { success: true, data: { ref } };
}

// moduleStop stops the run ref: nothing of it is performed from now on,
// and the host ends it (its prompt withdrawn).
export function moduleStop(msg) {
  const ref = String(msg.ref || '');
  stopRun(ref);
  const id = inflight.get(ref);
  if (id) native.cancel(id);
  return { success: true, data: {} };
}
