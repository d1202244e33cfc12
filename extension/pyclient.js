// An extension page's side of a run (a Python agent's, or a module's:
// startModule): it asks the service worker to
// start one (the run itself is in the offscreen document, pyhost.js) and
// follows its progress, relayed as {type: 'python-event', ref, event}. The
// page may close at any time: the run goes on, and a page opened later can
// follow it again (followPython).

// follow calls the handlers for ref's events until its end, and resolves
// to the run's result.
function follow(ref, { onOutput = () => {}, onDenial = () => {}, onStarted = () => {} }) {
  return new Promise((resolve) => {
    const listener = (msg) => {
      if (msg?.type !== 'python-event' || msg.ref !== ref) return;
      const ev = msg.event || {};
      if (ev.kind === 'output') onOutput(String(ev.text ?? ''));
      else if (ev.kind === 'denial') onDenial(ev.denial || {});
      else if (ev.kind === 'started') onStarted(ev.startMs);
      else if (ev.kind === 'end') {
        chrome.runtime.onMessage.removeListener(listener);
        resolve(ev.result || { status: 'internal_error', error: 'the run ended without a result' });
      }
    };
    chrome.runtime.onMessage.addListener(listener);
  });
}

// startPython starts agentId (on tabId, in sessionId) and returns {ref,
// done}: done resolves to {status, output, code, error, timings,
// sessionId}. timings.askedMs is from this call to the agent's first line.
export async function startPython({ agentId, input, tabId, sessionId = '', onOutput, onDenial, onStarted = () => {} }) {
  const t0 = performance.now();
  const ref = crypto.randomUUID();
  let askedMs;
  // Listening before asking: the first events may come before the answer.
  const followed = follow(ref, { onOutput, onDenial, onStarted: (ms) => { askedMs = Math.round(performance.now() - t0); onStarted(ms); } });
  let r;
  try {
    r = await chrome.runtime.sendMessage({ type: 'python-start', ref, agentId, input, tabId, sessionId });
  } catch (e) {
    r = { success: false, code: 'internal_error', error: String(e.message || e) };
  }
  if (!r?.success) {
    return { ref, done: Promise.resolve({ status: r?.code || 'internal_error', code: r?.code || 'internal_error', error: r?.error, output: '', timings: {} }) };
  }
  const done = followed.then((res) => ({ ...res, timings: { ...(res.timings || {}), askedMs } }));
  return { ref, done };
}

// startModule starts a WebAssembly agent the same way: the service worker
// holds its run (moduleruns.js), which outlives this page.
export async function startModule({ agentId, input, tabId, sessionId = '', onOutput, onDenial }) {
  const ref = crypto.randomUUID();
  const followed = follow(ref, { onOutput, onDenial });
  let r;
  try {
    r = await chrome.runtime.sendMessage({ type: 'module-start', ref, agentId, input, tabId, sessionId });
  } catch (e) {
    r = { success: false, code: 'internal_error', error: String(e.message || e) };
  }
  if (!r?.success) {
    return { ref, done: Promise.resolve({ status: r?.code || 'internal_error', code: r?.code || 'internal_error', error: r?.error, output: '' }) };
  }
  return { ref, done: followed };
}

export const stopPython = (ref) => chrome.runtime.sendMessage({ type: 'python-stop', ref });

// latestPython is the newest run the service worker kept for agentId (any
// agent when omitted), with its output so far, or null.
export async function latestPython(agentId) {
  const r = await chrome.runtime.sendMessage({ type: 'python-runs' });
  const runs = (r?.data?.runs || []).filter((x) => !agentId || x.agentId === agentId);
  return runs.at(-1) || null;
}

// followPython follows a run that may have ended already.
export async function followPython(run, handlers) {
  if (run.result) return run.result;
  const followed = follow(run.ref, handlers);
  // It may have ended between the listing and the listening.
  const again = (await chrome.runtime.sendMessage({ type: 'python-runs' }))?.data?.runs?.find((x) => x.ref === run.ref);
  return again?.result || followed;
}

export const warmPython = () => chrome.runtime.sendMessage({ type: 'python-warm' }).catch(() => {});

// pyodideMissing says whether the extension was loaded without Pyodide
// (extension/pyodide is filled by scripts/fetch-pyodide.sh, and a package
// from scripts/package-extension.sh holds it).
export async function pyodideMissing() {
  try {
    const r = await fetch(chrome.runtime.getURL('pyodide/pyodide.mjs'), { method: 'HEAD' });
    return !r.ok;
  } catch {
    return true;
  }
}
