// The Python runs' home: this module runs in the offscreen document, which
// the service worker creates (offdoc.js) and which lives while the
// extension does, not while a popup is open. Chrome closes an action popup
// as soon as it loses focus, which a prompt window takes; a run hosted by
// the popup would die with it. Here it goes on, and the popup, or the
// options page, only starts runs and shows their progress, relayed by the
// service worker (router.js: python-start, python-progress, python-event).
// Only the service worker is obeyed (swsender.js).
import { fromWorker } from './swsender.js';
import { runPython, warmUp, poolState } from './pyrun.js';

// The runs in progress, by the ref the service worker gave them.
const runs = new Map();

// Output is sent on in pieces at most every OUTPUT_EVERY_MS: an agent
// printing line by line must not become one message per line through two
// hops.
const OUTPUT_EVERY_MS = 50;

function progress(ref, event) {
  return chrome.runtime.sendMessage({ type: 'python-progress', ref, event }).catch(() => {});
}

function start({ ref, agentId, input, tabId, sessionId }) {
  let pending = '';
  let flushTimer = null;
  const flush = () => {
    clearTimeout(flushTimer);
    flushTimer = null;
    if (pending) progress(ref, { kind: 'output', text: pending });
    pending = '';
  };
  const handle = runPython({
    ref,
    agentId: String(agentId), input: String(input ?? ''), tabId: Number.isInteger(tabId) ? tabId : undefined, sessionId: String(sessionId || ''),
    onOutput: (text) => {
      pending += text;
      flushTimer ??= setTimeout(flush, OUTPUT_EVERY_MS);
    },
    onDenial: (denial) => { flush(); progress(ref, { kind: 'denial', denial }); },
    onStarted: (startMs) => progress(ref, { kind: 'started', startMs }),
  });
  runs.set(ref, handle);
  handle.done.then((result) => {
    flush();
    runs.delete(ref);
    progress(ref, { kind: 'end', result });
  }, (e) => {
    flush();
    runs.delete(ref);
    progress(ref, { kind: 'end', result: { status: 'internal_error', code: 'internal_error', error: String(e?.message || e), output: '' } });
  });
}

const ops = {
  start: (msg) => { start(msg); return { success: true, data: { ref: msg.ref } }; },
  stop: (msg) => {
    const h = runs.get(msg.ref);
    if (!h) return { success: false, code: 'bad_request', error: 'no such run in progress' };
    h.stop();
    return { success: true, data: {} };
  },
  // warm loads a sandbox ahead of the next run (the popup asks as it opens).
  warm: () => { warmUp().catch(() => {}); return { success: true, data: {} }; },
  state: async () => ({ success: true, data: { pool: await poolState(), running: runs.size } }),
};

chrome.runtime.onMessage.addListener((msg, sender, sendResponse) => {
  if (msg?.target !== 'python') return false;
  if (!fromWorker(sender) || !ops[msg.op]) {
    sendResponse({ success: false, code: 'permission_not_granted', error: 'Python runs answer the service worker only' });
    return false;
  }
  Promise.resolve(ops[msg.op](msg)).then(sendResponse, (e) => sendResponse({ success: false, code: 'internal_error', error: String(e?.message || e) }));
  return true;
});
