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

export const HOST_NAME = 'com.agentgate.nmhost';

// PROTOCOL is the version of docs/protocol.md this extension speaks; the
// host reports its own in hello (data.protocol).
export const PROTOCOL = 2;

// protocolProblem says, for people, why a host that reported version got
// no requests; null when the versions match.
export function protocolProblem(version) {
  if (version === PROTOCOL) return null;
  if (!Number.isInteger(version)) return `nmhost did not report a protocol version (this extension speaks ${PROTOCOL}): reinstall nmhost`;
  return version < PROTOCOL
    ? `nmhost speaks protocol ${version}, older than this extension's ${PROTOCOL}: update nmhost (go build ./cmd/nmhost, then nmhost install)`
    : `nmhost speaks protocol ${version}, newer than this extension's ${PROTOCOL}: update the extension`;
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
    this.ready = null; // the current connection's hello: {ok, hello} or {ok: false, code, message}
  }

  // onConnect(fn) calls fn after each new connection (a host process
  // started); onDisconnect(fn) after it ends.
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
    port.onMessage.addListener((m) => this.onMessage(m));
    port.onDisconnect.addListener(() => {
      const why = chrome.runtime.lastError?.message || 'the host exited';
      if (this.port === port) this.port = null;
      this.chunks.clear();
      for (const [, p] of this.pending) p.reject(new HostError('host_disconnected', why));
      this.pending.clear();
      for (const fn of this.disconnectListeners) fn();
    });
    this.port = port;
    this.ready = this.send('hello', {}, { timeoutMs: 30000 }).then((r) => {
      if (!r?.success) return { ok: false, code: r?.code || 'host_unavailable', message: r?.error || 'hello failed' };
      const problem = protocolProblem(r.data?.protocol);
      if (problem) return { ok: false, code: 'protocol_mismatch', message: problem, hello: r.data };
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
      const ready = await this.ready;
      if (!ready.ok) throw new HostError(ready.code, ready.message);
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

  onMessage(m) {
    if (m && m.chunk) {
      this.collect(m);
      return;
    }
    if (!m || typeof m !== 'object') return;
    if (typeof m.id === 'string' && m.id.startsWith('h:') && RESULT_TYPES[m.type]) {
      this.answerHost(m);
      return;
    }
    if (typeof m.id === 'string' && m.id.startsWith('h:') && NOTICES.has(m.type)) {
      Promise.resolve().then(() => this.hostHandlers[m.type]?.(m)).catch((e) => console.warn(`agentgate: ${m.type}:`, e.message || e));
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

  collect(m) {
    const { seq, total, data } = m.chunk;
    const key = JSON.stringify(m.id);
    const parts = this.chunks.get(key) || [];
    parts[seq] = data;
    this.chunks.set(key, parts);
    if (parts.filter((x) => x !== undefined).length !== total) return;
    this.chunks.delete(key);
    const bytes = parts.map((b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
    const joined = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
    let off = 0;
    for (const b of bytes) {
      joined.set(b, off);
      off += b.length;
    }
    this.onMessage(JSON.parse(new TextDecoder().decode(joined)));
  }

  async answerHost(m) {
    const handler = this.hostHandlers[m.type];
    let result;
    try {
      result = handler ? await handler(m) : { success: false, code: 'unknown_type', error: `no handler for ${m.type}` };
    } catch (e) {
      result = { success: false, code: e.code || 'internal_error', error: String(e.message || e) };
    }
    // A prompt the host withdrew meanwhile: nobody there waits for it.
    if (result?.noReply) return;
    this.port?.postMessage({ ...result, id: m.id, type: RESULT_TYPES[m.type] });
  }
}

export const native = new NativeHost();
