// The worker a Python agent runs in, inside the sandbox page. Pyodide is
// loaded from the extension's own files (scripts/fetch-pyodide.sh), then
// every way out of the worker is removed before the agent's code runs:
// Python's `js` module is an empty object, and the network, worker and
// storage constructors are deleted from the global scope and its
// prototypes. What is left is restricted_api, whose functions each send
// one call to the host, which decides it.
//
// A worker serves one run and is then ended: it is loaded ahead of time
// ('init', the warm pool of pyrun.js), and only 'run' tells it the agent.
// So nothing of one run (globals, imported modules, files, timers) can
// reach the next, and no two agents ever share an interpreter.
import { loadPyodide } from './pyodide/pyodide.mjs';

const post = self.postMessage.bind(self);
const pending = new Map();
let nextId = 1;
let pyodide = null;
let maxMemory = 0;
let agentId = '';
// ended: the run is over (done posted): nothing more leaves the worker,
// whatever the Python code still does before the worker is terminated.
let ended = false;

function finish(status, error, extra = {}) {
  if (ended) return;
  ended = true;
  post({ type: 'done', status, error, ...extra });
}

// maxMemory is enforced, not only checked: Pyodide's heap is one
// WebAssembly.Memory, which Emscripten grows with Memory.prototype.grow
// when malloc runs out. A growth past maxMemory is refused (Python sees a
// MemoryError) and ends the run with memory_limit, even if the agent
// catches the error. Python cannot undo this: it reaches no JavaScript
// global (jsglobals is empty) and the sandbox's CSP has no 'unsafe-eval'
// for the Function constructor. During the load (maxMemory still 0)
// nothing is refused.
const grow = WebAssembly.Memory.prototype.grow;
Object.defineProperty(WebAssembly.Memory.prototype, 'grow', {
  configurable: false, writable: false,
  value: function (pages) {
    const after = this.buffer.byteLength + Number(pages) * 65536;
    if (maxMemory && after > maxMemory) {
      finish('memory_limit', `Python asked for ${after} bytes of memory; maxMemory is ${maxMemory}`);
      throw new RangeError('maxMemory reached');
    }
    return grow.call(this, pages);
  },
});

// overMemory ends the run when the heap already passes maxMemory (a
// limit below what Pyodide holds once loaded): checked when the run
// starts, after each call and on a timer.
function overMemory() {
  if (!maxMemory || memoryBytes() <= maxMemory) return false;
  finish('memory_limit', `Python uses ${memoryBytes()} bytes; maxMemory is ${maxMemory}`);
  return true;
}

// A run prints at most MAX_OUTPUT bytes, as a module's run does: past it
// the run ends with too_large. The cut is made here, in the worker, so
// nothing larger ever crosses to the page, whose main thread a flood of
// output would hold (and with it the run's timer and the popup).
const MAX_OUTPUT = 1 << 20;
let printed = 0;
let over = false;
const utf8 = new TextEncoder();

function emit(text) {
  if (over || ended) return;
  const s = String(text);
  const room = MAX_OUTPUT - printed;
  // At most room + 1 characters are encoded: enough to know it passes.
  const bytes = utf8.encode(s.length > room + 1 ? s.slice(0, room + 1) : s);
  if (bytes.length <= room) {
    printed += bytes.length;
    post({ type: 'output', text: s });
    return;
  }
  over = true;
  printed = MAX_OUTPUT;
  const part = new TextDecoder().decode(bytes.subarray(0, room)).replace(/\uFFFD$/, '');
  if (part) post({ type: 'output', text: part });
  finish('too_large', `the run's output passed its limit of ${MAX_OUTPUT} bytes`);
}

// The globals an agent could reach the world, or start more code, with.
const ESCAPES = [
  'fetch', 'XMLHttpRequest', 'WebSocket', 'WebSocketStream', 'EventSource', 'WebTransport',
  'importScripts', 'Worker', 'SharedWorker', 'indexedDB', 'caches', 'BroadcastChannel',
  'postMessage', 'close', 'chrome', 'browser', 'FileReaderSync', 'Notification', 'requestFileSystem',
  'webkitRequestFileSystem', 'webkitResolveLocalFileSystemURL', 'navigator', 'storageBuckets',
];

function lockDown() {
  for (let o = globalThis; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const name of ESCAPES) {
      if (!Object.prototype.hasOwnProperty.call(o, name)) continue;
      try {
        delete o[name];
      } catch { /* not configurable: shadowed below */ }
    }
  }
  for (const name of ESCAPES) {
    if (name in globalThis) {
      try {
        Object.defineProperty(globalThis, name, { value: undefined, writable: false, configurable: false });
      } catch { /* nothing more to do */ }
    }
  }
}

function memoryBytes() {
  return pyodide?._module?.HEAPU8?.length || 0;
}

// call sends one restricted_api call to the page, which asks the host,
// and resolves to the reply as JSON. A run already over maxMemory makes no
// more calls: it ends here.
function call(name, paramsJSON) {
  if (ended || overMemory()) return new Promise(() => {});
  const id = nextId++;
  const params = JSON.parse(paramsJSON);
  return new Promise((resolve) => {
    pending.set(id, (reply) => {
      overMemory();
      // log's text is shown only once the host allowed the call, tagged
      // with the agent that wrote it.
      if (name === 'log' && reply?.ok) emit(`[${agentId}] ${params.text}\n`);
      resolve(JSON.stringify(reply || {}));
    });
    post({ type: 'call', id, name, params });
  });
}

const PRELUDE = `
import json as _json

class RestrictedAPIError(Exception):
    """A restricted_api call the host refused or that failed; .code is its reason code."""
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code

# The results of synchronous calls: the value, which can also be awaited
# (await gives the plain value back), so code written either way works.
class _AwaitableStr(str):
    def __await__(self):
        return str(self)
        yield

class _AwaitableDict(dict):
    def __await__(self):
        return dict(self)
        yield

class _AwaitableList(list):
    def __await__(self):
        return list(self)
        yield

class _AwaitableInt(int):
    def __await__(self):
        return int(self)
        yield

class _AwaitableBool(int):
    """True or False (bool cannot be subclassed): == True, prints as True."""
    def __repr__(self):
        return repr(bool(self))
    __str__ = __repr__
    def __await__(self):
        return bool(self)
        yield

def _awaitable(v):
    if isinstance(v, bool):
        return _AwaitableBool(v)
    for plain, wrapped in ((str, _AwaitableStr), (dict, _AwaitableDict), (list, _AwaitableList), (int, _AwaitableInt)):
        if type(v) is plain:
            return wrapped(v)
    return v  # FetchResponse is awaitable itself

class FetchResponse:
    def __init__(self, d):
        import base64
        self.status = d.get("status", 0)
        self.status_text = d.get("statusText", "")
        self.headers = d.get("headers") or {}
        self.url = d.get("finalUrl", "")
        self.redirects = d.get("redirects") or []
        body = d.get("body", "")
        if d.get("bodyEncoding") == "base64":
            self.content = base64.b64decode(body)
            self.text = self.content.decode("utf-8", "replace")
        else:
            self.text = body
            self.content = body.encode()
        self.ok = 200 <= self.status < 300
    def json(self):
        return _json.loads(self.text)
    def __repr__(self):
        return f"<FetchResponse {self.status} {self.url}>"
    def __await__(self):
        return self
        yield

def _make_restricted_api(present, absent, call, report_absent):
    # Synchronous calls: with WebAssembly JavaScript Promise Integration
    # (JSPI), run_sync suspends Python until the host's answer arrives, so
    # an agent may write restricted_api.getPageText() without await. The
    # result is the value itself, of a type that can still be awaited
    # (await gives the plain value), so agents written with await run
    # unchanged. Where run_sync cannot run (no JSPI in the browser, or a
    # stack not entered through runPythonAsync, such as a callback), a call
    # returns a coroutine as before, which must be awaited.
    try:
        from pyodide.ffi import run_sync, can_run_sync
    except ImportError:
        run_sync = can_run_sync = None

    def _sync():
        return run_sync is not None and can_run_sync()

    async def _call(name, params):
        r = _json.loads(await call(name, _json.dumps(params)))
        if not r.get("ok"):
            raise RestrictedAPIError(r.get("code", "internal_error"), r.get("error", ""))
        return r.get("data")

    def _api(fn, make=None):
        # make builds the result from the coroutine's value outside it: a
        # value run_sync hands back must not be awaitable itself (the
        # promise it travels in would await it again, and a FetchResponse
        # awaits to itself).
        def f(*args, **kwargs):
            co = fn(*args, **kwargs)
            if not _sync():
                if make is None:
                    return co
                async def made():
                    return make(await co)
                return made()
            v = run_sync(co)
            return _awaitable(make(v) if make else v)
        f.__name__ = fn.__name__
        f.__qualname__ = fn.__name__
        f.__doc__ = fn.__doc__
        return f

    @_api
    async def querySelector(selector):
        return await _call("querySelector", {"selector": str(selector)})
    @_api
    async def querySelectorAll(selector, limit=1000):
        return (await _call("querySelectorAll", {"selector": str(selector), "limit": int(limit)})).get("elements", [])
    @_api
    async def getPageText():
        return (await _call("getPageText", {})).get("text", "")
    @_api
    async def setElementText(selector, text):
        return (await _call("setElementText", {"selector": str(selector), "text": str(text)})).get("found", False)
    @_api
    async def writeToClipboard(text):
        await _call("writeToClipboard", {"text": str(text)})
        return True
    @_api
    async def readFromClipboard():
        return (await _call("readFromClipboard", {})).get("text", "")
    async def _fetch(url, options=None):
        o = dict(options or {})
        opts = {k: o[k] for k in ("method", "headers", "body", "bodyEncoding") if k in o}
        return await _call("fetch", {"url": str(url), "options": opts})
    _fetch.__name__ = "fetch"
    fetch = _api(_fetch, FetchResponse)
    @_api
    async def showNotification(title, options=None):
        o = dict(options or {})
        await _call("showNotification", {"title": str(title), "message": str(o.get("body", o.get("message", "")))})
        return True
    @_api
    async def memory_write(text, tags=None):
        return (await _call("memory_write", {"text": str(text), "tags": [str(t) for t in (tags or [])]})).get("id", 0)
    @_api
    async def memory_search(query, limit=10):
        return (await _call("memory_search", {"query": str(query), "limit": int(limit)})).get("results", [])
    @_api
    async def shell(command):
        return (await _call("shell", {"command": str(command)})).get("output", "")
    @_api
    async def mcp_call(server, tool, args=None):
        return await _call("mcp_call", {"server": str(server), "tool": str(tool), "args": dict(args or {})})
    def log(*args):
        # Decided and audited by the host; the worker shows the text only
        # once the host allowed it (a refusal comes back as a denial). With
        # JSPI the agent waits for that, so log lines and prints keep their
        # order; without it the line shows when the answer comes.
        text = " ".join(str(a) for a in args)
        p = call("log", _json.dumps({"text": text}))
        if _sync():
            run_sync(p)
        return None

    functions = {f.__name__: f for f in (log, querySelector, querySelectorAll, getPageText, setElementText,
                                          writeToClipboard, readFromClipboard, fetch, showNotification,
                                          memory_write, memory_search, shell)}
    granted = {n: staticmethod(functions[n]) for n in present if n in functions}
    absent = frozenset(absent)

    def __getattr__(self, name):
        if name in absent:
            report_absent(name)
            raise AttributeError(f"restricted_api has no {name!r}: the agent was not granted the permission it needs (import_not_granted)")
        raise AttributeError(f"restricted_api has no {name!r}")
    def __setattr__(self, name, value):
        raise AttributeError("restricted_api is read-only")
    def __dir__(self):
        return sorted(granted)

    cls = type("RestrictedAPI", (), {**granted, "__slots__": (), "__getattr__": __getattr__,
                                     "__setattr__": __setattr__, "__dir__": __dir__})
    return cls()
`;

async function init() {
  const t0 = performance.now();
  pyodide = await loadPyodide({
    indexURL: new URL('./pyodide/', import.meta.url).href,
    jsglobals: {},
    stdout: (s) => emit(s + '\n'),
    stderr: (s) => emit(s + '\n'),
  });
  pyodide.runPython(PRELUDE);
  lockDown();
  // jspi: whether restricted_api calls can be synchronous here (JSPI).
  post({ type: 'ready', loadMs: Math.round(performance.now() - t0), memory: memoryBytes(), jspi: !!pyodide._module?.jspiSupported });
}

let started = false;

async function run(msg) {
  if (started) return; // one run per worker, ever
  started = true;
  const t0 = performance.now();
  maxMemory = Number(msg.maxMemory) || 0;
  agentId = String(msg.agentId || '');
  if (overMemory()) return;
  // While Python awaits (a call, a sleep), the event loop runs this check;
  // a growth past the limit is refused at once (grow, above).
  setInterval(overMemory, 250);
  const ns = pyodide.globals.get('dict')();
  try {
    const make = pyodide.globals.get('_make_restricted_api');
    const api = make(pyodide.toPy(msg.api || []), pyodide.toPy(msg.absent || []), call,
      (name) => post({ type: 'absent', name }));
    ns.set('restricted_api', api);
    ns.set('agent_input', String(msg.input ?? ''));
    ns.set('RestrictedAPIError', pyodide.globals.get('RestrictedAPIError'));
    ns.set('__name__', '__main__');
    post({ type: 'started' });
    await pyodide.runPythonAsync(String(msg.source), { globals: ns });
    if (overMemory()) return;
    finish('ok', undefined, { runMs: Math.round(performance.now() - t0) });
  } catch (e) {
    const text = String(e?.message || e);
    const status = /MemoryError|out of memory/i.test(text) ? 'memory_limit' : 'exception';
    finish(status, text.slice(-4000), { runMs: Math.round(performance.now() - t0) });
  }
}

self.onmessage = (e) => {
  const msg = e.data || {};
  if (msg.type === 'init') {
    init().catch((err) => post({ type: 'fatal', error: String(err?.message || err) }));
  } else if (msg.type === 'run') {
    run(msg);
  } else if (msg.type === 'result') {
    const resolve = pending.get(msg.id);
    pending.delete(msg.id);
    if (resolve) resolve(msg.reply || {});
  }
};
post({ type: 'loaded' });
