// The worker a Python agent runs in, inside the sandbox page. Pyodide is
// loaded from the extension's own files (scripts/fetch-pyodide.sh), then
// every way out of the worker is removed before the agent's code runs:
// Python's `js` module is an empty object, and the network, worker and
// storage constructors are deleted from the global scope and its
// prototypes. What is left is restricted_api, whose functions each send
// one call to the host, which decides it.
import { loadPyodide } from './pyodide/pyodide.mjs';

const post = self.postMessage.bind(self);
const pending = new Map();
let nextId = 1;
let pyodide = null;
let maxMemory = 0;

// A run prints at most MAX_OUTPUT bytes, as a module's run does: past it
// the run ends with too_large. The cut is made here, in the worker, so
// nothing larger ever crosses to the page, whose main thread a flood of
// output would hold (and with it the run's timer and the popup).
const MAX_OUTPUT = 1 << 20;
let printed = 0;
let over = false;
const utf8 = new TextEncoder();

function emit(text) {
  if (over) return;
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
  post({ type: 'done', status: 'too_large', error: `the run's output passed its limit of ${MAX_OUTPUT} bytes` });
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

// call sends one restricted_api call to the page, which asks the host.
// A run already over maxMemory makes no more calls: it ends here.
function call(name, paramsJSON) {
  if (maxMemory && memoryBytes() > maxMemory) {
    post({ type: 'done', status: 'memory_limit', error: `Python uses ${memoryBytes()} bytes; maxMemory is ${maxMemory}` });
    return new Promise(() => {});
  }
  const id = nextId++;
  return new Promise((resolve) => {
    pending.set(id, resolve);
    post({ type: 'call', id, name, params: JSON.parse(paramsJSON) });
  });
}

const PRELUDE = `
import json as _json

class RestrictedAPIError(Exception):
    """A restricted_api call the host refused or that failed; .code is its reason code."""
    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code

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

def _make_restricted_api(present, absent, call, report_absent, output):
    async def _call(name, params):
        r = _json.loads(await call(name, _json.dumps(params)))
        if not r.get("ok"):
            raise RestrictedAPIError(r.get("code", "internal_error"), r.get("error", ""))
        return r.get("data")

    async def querySelector(selector):
        return await _call("querySelector", {"selector": str(selector)})
    async def querySelectorAll(selector, limit=1000):
        return (await _call("querySelectorAll", {"selector": str(selector), "limit": int(limit)})).get("elements", [])
    async def getPageText():
        return (await _call("getPageText", {})).get("text", "")
    async def setElementText(selector, text):
        return (await _call("setElementText", {"selector": str(selector), "text": str(text)})).get("found", False)
    async def writeToClipboard(text):
        await _call("writeToClipboard", {"text": str(text)})
        return True
    async def readFromClipboard():
        return (await _call("readFromClipboard", {})).get("text", "")
    async def fetch(url, options=None):
        o = dict(options or {})
        opts = {k: o[k] for k in ("method", "headers", "body", "bodyEncoding") if k in o}
        return FetchResponse(await _call("fetch", {"url": str(url), "options": opts}))
    async def showNotification(title, options=None):
        o = dict(options or {})
        await _call("showNotification", {"title": str(title), "message": str(o.get("body", o.get("message", "")))})
        return True
    async def memory_write(text, tags=None):
        return (await _call("memory_write", {"text": str(text), "tags": [str(t) for t in (tags or [])]})).get("id", 0)
    async def memory_search(query, limit=10):
        return (await _call("memory_search", {"query": str(query), "limit": int(limit)})).get("results", [])
    async def shell(command):
        return (await _call("shell", {"command": str(command)})).get("output", "")
    def log(*args):
        text = " ".join(str(a) for a in args)
        output(text + "\\n")
        call("log", _json.dumps({"text": text}))  # decided and audited by the host; a refusal comes back as a denial
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

async function init(msg) {
  const t0 = performance.now();
  pyodide = await loadPyodide({
    indexURL: new URL('./pyodide/', import.meta.url).href,
    jsglobals: {},
    stdout: (s) => emit(s + '\n'),
    stderr: (s) => emit(s + '\n'),
  });
  maxMemory = msg.maxMemory || 0;
  pyodide.runPython(PRELUDE);
  lockDown();
  post({ type: 'ready', loadMs: Math.round(performance.now() - t0), memory: memoryBytes() });
}

async function run(msg) {
  const t0 = performance.now();
  maxMemory = msg.maxMemory || maxMemory;
  const ns = pyodide.globals.get('dict')();
  try {
    const make = pyodide.globals.get('_make_restricted_api');
    const api = make(pyodide.toPy(msg.api || []), pyodide.toPy(msg.absent || []), call,
      (name) => post({ type: 'absent', name }), emit);
    ns.set('restricted_api', api);
    ns.set('agent_input', String(msg.input ?? ''));
    ns.set('RestrictedAPIError', pyodide.globals.get('RestrictedAPIError'));
    ns.set('__name__', '__main__');
    await pyodide.runPythonAsync(String(msg.source), { globals: ns });
    if (over) return; // ended already: too_large
    if (maxMemory && memoryBytes() > maxMemory) {
      post({ type: 'done', status: 'memory_limit', error: `Python used ${memoryBytes()} bytes; maxMemory is ${maxMemory}` });
      return;
    }
    post({ type: 'done', status: 'ok', runMs: Math.round(performance.now() - t0) });
  } catch (e) {
    if (over) return;
    const text = String(e?.message || e);
    const status = /MemoryError|out of memory/i.test(text) ? 'memory_limit' : 'exception';
    post({ type: 'done', status, error: text.slice(-4000), runMs: Math.round(performance.now() - t0) });
  }
}

self.onmessage = (e) => {
  const msg = e.data || {};
  if (msg.type === 'init') {
    init(msg).catch((err) => post({ type: 'fatal', error: String(err?.message || err) }));
  } else if (msg.type === 'run') {
    run(msg);
  } else if (msg.type === 'result') {
    const resolve = pending.get(msg.id);
    pending.delete(msg.id);
    if (resolve) resolve(JSON.stringify(msg.reply || {}));
  }
};
post({ type: 'loaded' });
