// The one owner of the native-messaging port to nmhost. Requests carry ids
// and timeouts; chunked replies are reassembled; the port reconnects on the
// next request after the host exits; requests the host sends to us
// (browser-call, prompt, prompt-layer) go to the handlers set with
// setHostHandlers, and so do its notices (prompt-cancel), which take no
// answer. Others learn when a host process starts and ends (onConnect,
// onDisconnect): the audit check runs on each start.
//
// Each new host process is asked `hello` before anything else is sent to
// it: a host that speaks another protocol version than this extension
// gets no request at all, and every request fails with protocol_mismatch
// saying which side is older, instead of a reply read in the wrong shape.
// Nor is anything it asks done: its browser-calls, prompts and notices
// are refused unanswered (and counted in that message), until a host of
// this version is on the port.
//
// What the host asks is answered on the port it came from, and only
// while that port is the current one: an answer never reaches another
// host process than the one that asked. When a port closes, the prompts
// its host opened are withdrawn (prompts.js, through onDisconnect).

export const HOST_NAME = 'com.agentgate.nmhost';

// PROTOCOL is the version of docs/protocol.md this extension speaks; the
// host reports its own in hello (data.protocol).
export const PROTOCOL = 3;

// protocolProblem says, for people, why a host that reported version got
// no requests; null when the versions match.
export function protocolProblem(version) {
  if (version === PROTOCOL) return null;
  if (!Number.isInteger(version)) return `nmhost did not report a protocol version (this extension speaks ${PROTOCOL}): reinstall nmhost`;
  return version < PROTOCOL
    ? `nmhost speaks protocol ${version}, older than this extension's ${PROTOCOL}: update nmhost (go build ./cmd/nmhost, then nmhost install)`
    : `nmhost speaks protocol ${version}, newer than this extension's ${PROTOCOL}: update the extension`;
}

// fromBase64 decodes one chunk of a large reply. The platform's decoder
// (Uint8Array.fromBase64, in Chrome since 140) is about 75 times faster
// than a loop over atob's characters: a 1 MiB reply spent 60 ms in that
// loop alone. The loop stays for an older browser.
function fromBase64(b64) {
  if (typeof Uint8Array.fromBase64 === 'function') return Uint8Array.fromBase64(b64);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

export class HostError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

// What a host-initiated request type is answered with.
const RESULT_TYPES = { 'browser-call': 'browser-result', prompt: 'prompt-result', 'prompt-layer': 'prompt-layer-result' };
// What the host sends us that takes no answer.
const NOTICES = new Set(['prompt-cancel']);

class NativeHost {
  constructor() {
    this.port = null;
    this.next = 1;
    this.pending = new Map(); // id -> {resolve, reject, onEvent, timer}
    this.chunks = new Map(); // id -> pieces by seq
    this.hostHandlers = {};
    this.connectListeners = [];
    this.disconnectListeners = [];
    this.conn = null; // the current connection (see connect)
    this.ready = null; // the current connection's hello: {ok, hello} or {ok: false, code, message}
  }

  // onConnect(fn) calls fn after each new connection (a host process
  // started); onDisconnect(fn) after it ends, with the connection and why.
  onConnect(fn) {
    this.connectListeners.push(fn);
  }

  onDisconnect(fn) {
    this.disconnectListeners.push(fn);
  }

  setHostHandlers(handlers) {
    this.hostHandlers = handlers;
  }

  connect() {
    if (this.port) return this.port;
    const port = chrome.runtime.connectNative(HOST_NAME);
    // conn is this host process: served only once its hello showed this
    // protocol version (matched); refused lists what it asked before or
    // without that.
    const conn = { port, matched: false, refused: [], asked: 0 };
    port.onMessage.addListener((m) => this.onMessage(m, conn));
    port.onDisconnect.addListener(() => {
      const why = chrome.runtime.lastError?.message || 'the host exited';
      if (this.port === port) this.port = null;
      this.chunks.clear();
      for (const [, p] of this.pending) p.reject(new HostError('host_disconnected', why));
      this.pending.clear();
      for (const fn of this.disconnectListeners) fn(conn, why);
    });
    this.port = port;
    this.conn = conn;
    this.ready = this.send('hello', {}, { timeoutMs: 30000 }).then((r) => {
      if (!r?.success) return { ok: false, code: r?.code || 'host_unavailable', message: r?.error || 'hello failed' };
      const problem = protocolProblem(r.data?.protocol);
      if (problem) return { ok: false, code: 'protocol_mismatch', message: problem, hello: r.data };
      conn.matched = true;
      return { ok: true, hello: r.data };
    }, (e) => ({ ok: false, code: e.code || 'host_unavailable', message: String(e.message || e) }));
    // After hello is posted: a listener that sends its own request finds
    // the port in place, and its request waits for hello's answer.
    queueMicrotask(() => { for (const fn of this.connectListeners) fn(); });
    return port;
  }

  // request sends {type, ...params} and resolves with the reply object
  // ({success, data} or {success: false, code, error}).
  // onSent(id), when given, learns the request's id once it is sent: a
  // caller that may have to end the request uses it with cancel.
  // Nothing is sent before the host's own hello has shown its protocol
  // version matches (a caller's hello is sent afresh: it asks whether the
  // host is alive now).
  async request(type, params = {}, opts = {}) {
    for (;;) {
      const port = this.connect();
      const conn = this.conn;
      const ready = await this.ready;
      if (!ready.ok) throw new HostError(ready.code, ready.message + refusedNote(conn));
      // The host that answered hello may have gone meanwhile: the next
      // one is asked hello first too, never sent this request unchecked.
      if (this.port === port) return this.send(type, params, opts);
    }
  }

  // send posts one request on the current port (connecting if needed).
  send(type, params = {}, { timeoutMs = 120000, onEvent, onSent } = {}) {
    return new Promise((resolve, reject) => {
      const id = `x${this.next++}`;
      const done = (fn) => (v) => {
        clearTimeout(entry.timer);
        this.pending.delete(id);
        fn(v);
      };
      const entry = { onEvent };
      entry.resolve = done(resolve);
      entry.reject = done(reject);
      entry.timer = setTimeout(() => entry.reject(new HostError('timeout', `${type} got no reply in ${timeoutMs} ms`)), timeoutMs);
      this.pending.set(id, entry);
      try {
        this.connect().postMessage({ ...params, id, type });
        onSent?.(id);
      } catch (e) {
        entry.reject(new HostError('host_unavailable', String(e.message || e)));
      }
    });
  }

  // cancel asks the host to end request id, still in progress (its
  // page went away); its reply still comes, to nobody in particular.
  cancel(id) {
    if (!this.port) return;
    this.request('cancel-request', { requestId: id }, { timeoutMs: 10000 }).catch(() => {});
  }

  onMessage(m, conn) {
    if (m && m.chunk) {
      this.collect(m, conn);
      return;
    }
    if (!m || typeof m !== 'object') return;
    const fromHost = typeof m.id === 'string' && m.id.startsWith('h:');
    // Own members only: a host's type named "constructor" or "toString"
    // is no request the extension answers.
    const asks = Object.hasOwn(RESULT_TYPES, m.type);
    if (fromHost && (asks || NOTICES.has(m.type)) && !this.serves(conn, m)) return;
    if (fromHost && asks) {
      this.answerHost(m, conn);
      return;
    }
    if (fromHost && NOTICES.has(m.type)) {
      Promise.resolve().then(() => this.hostHandlers[m.type]?.(m, conn)).catch((e) => console.warn(`agentgate: ${m.type}:`, e.message || e));
      return;
    }
    const p = this.pending.get(m.id);
    if (!p) return;
    if (m.event) {
      p.onEvent?.(m);
      return;
    }
    p.resolve(m);
  }

  // serves says whether what host process conn asks (m) is done: only
  // for a host whose hello showed this protocol version, still on the
  // current port. Anything else is refused unanswered, and counted.
  serves(conn, m) {
    if (conn.matched && this.port === conn.port) return true;
    conn.asked++;
    if (conn.refused.length < 8) conn.refused.push(String(m.type).slice(0, 40));
    console.warn(`agentgate: refused ${m.type} ${String(m.id).slice(0, 60)} from a host ${conn.matched ? 'that is no longer connected' : 'of another protocol version'}`);
    return false;
  }

  collect(m, conn) {
    const { seq, total, data } = m.chunk;
    const key = JSON.stringify(m.id);
    const parts = this.chunks.get(key) || [];
    parts[seq] = data;
    this.chunks.set(key, parts);
    if (parts.filter((x) => x !== undefined).length !== total) return;
    this.chunks.delete(key);
    const bytes = parts.map(fromBase64);
    const joined = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
    let off = 0;
    for (const b of bytes) {
      joined.set(b, off);
      off += b.length;
    }
    this.onMessage(JSON.parse(new TextDecoder().decode(joined)), conn);
  }

  async answerHost(m, conn) {
    const handler = this.hostHandlers[m.type];
    let result;
    try {
      result = handler ? await handler(m, conn) : { success: false, code: 'unknown_type', error: `no handler for ${m.type}` };
    } catch (e) {
      result = { success: false, code: e.code || 'internal_error', error: String(e.message || e) };
    }
    // A prompt the host withdrew meanwhile: nobody there waits for it.
    if (result?.noReply) return;
    // Only to the process that asked: after a restart the current port
    // is another host's, whose request of the same number is another one.
    if (this.port !== conn.port) {
      console.warn(`agentgate: the answer to ${m.type} ${String(m.id).slice(0, 60)} is dropped: the host that asked is gone`);
      return;
    }
    conn.port.postMessage({ ...result, id: m.id, type: RESULT_TYPES[m.type] });
  }
}

// refusedNote says, after a protocol mismatch, what that host asked of
// this browser: none of it was done.
function refusedNote(conn) {
  if (!conn?.asked) return '';
  const n = conn.asked;
  return `; it asked this browser for ${n} ${n === 1 ? 'thing' : 'things'} (${conn.refused.join(', ')}), and none was done`;
}

export const native = new NativeHost();
