// The Python sandbox page: declared under the manifest's "sandbox" key, so
// it has an opaque origin, no extension APIs and its own CSP (scripts from
// the extension only, WebAssembly compilation, connections to nothing but
// the extension's own files). It holds one dedicated worker, where Python
// runs, and relays between that worker and the extension page that made
// this frame. The page is trusted by source (window.parent) and by the
// per-run token the page sends first; every message back carries it.
'use strict';
(() => {
  let token = null;
  let worker = null;
  const base = location.href.replace(/sandbox\.html(?:[?#].*)?$/, '');
  const parentOrigin = new URL(base).origin;

  const toPage = (msg) => window.parent.postMessage({ ...msg, token }, parentOrigin);

  // The run's clock: what is left of its executionTimeout, counted while
  // it runs.
  let timer = null;
  let limit = 0;
  let left = null;
  let since = 0;
  function arm() {
    since = Date.now();
    timer = setTimeout(() => {
      timer = null;
      if (!worker) return;
      worker.terminate();
      worker = null;
      toPage({ type: 'done', status: 'timeout', error: `the agent ran longer than its executionTimeout of ${limit} ms and was stopped` });
    }, Math.max(0, left));
  }

  function startWorker() {
    // A sandboxed page cannot start a worker from a URL (its origin is
    // opaque); a blob worker can, and imports the worker module from the
    // extension, which the CSP's script-src 'self' allows.
    const boot = `import(${JSON.stringify(base + 'pyworker.js')}).catch((e) => postMessage({ type: 'fatal', error: String(e) }));`;
    const url = URL.createObjectURL(new Blob([boot], { type: 'text/javascript' }));
    worker = new Worker(url);
    URL.revokeObjectURL(url);
    worker.onmessage = (e) => toPage(e.data || {});
    worker.onerror = (e) => toPage({ type: 'fatal', error: e.message || 'the worker failed' });
  }

  window.addEventListener('message', (e) => {
    if (e.source !== window.parent || !e.data || typeof e.data !== 'object') return;
    const msg = e.data;
    if (token === null) {
      if (msg.type !== 'open' || typeof msg.token !== 'string' || msg.token.length < 32) return;
      token = msg.token;
      startWorker();
      return;
    }
    if (msg.token !== token) return;
    if (msg.type === 'terminate') {
      worker?.terminate();
      worker = null;
      return;
    }
    // The page stops the run's clock while a call waits for a person,
    // and starts it again after (pyrun.js): this frame's timer too.
    if (msg.type === 'pause') {
      if (timer !== null) {
        clearTimeout(timer);
        timer = null;
        left -= Date.now() - since;
      }
      return;
    }
    if (msg.type === 'resume') {
      if (timer === null && left !== null) arm();
      return;
    }
    const { token: _, timeoutMs, ...rest } = msg;
    if (msg.type === 'run' && Number(timeoutMs) > 0) {
      // The run's executionTimeout, kept here as well as in the page,
      // which is busy with the output it shows: this frame only relays
      // (at most 1 MiB of output, cut in the worker), so its timer fires
      // on time and ends the worker.
      limit = Number(timeoutMs);
      left = limit;
      arm();
    }
    worker?.postMessage(rest);
  });
})();
