// Unit tests of the service worker's routing (router.js) and its native
// port (native.js), against a stand-in for chrome.* and a scripted host:
// which senders reach which table, what a page may have forwarded, how a
// run is bound to its tab's document whatever the page says, and what
// reaches the host when its protocol differs or its reply comes in chunks.
import { test } from 'node:test';
import assert from 'node:assert/strict';

const ID = 'kfdflodbjjhffjcgfmobmhlinchkhdlj';
const BASE = `chrome-extension://${ID}/`;

// The host: every message the extension posts, and how it answers.
const host = { posted: [], protocol: 0, ports: [], answer: null }; // protocol: native.js's PROTOCOL, set below
function connectNative(name) {
  assert.equal(name, 'com.agentgate.nmhost');
  const listeners = { message: [], disconnect: [] };
  const port = {
    onMessage: { addListener: (fn) => listeners.message.push(fn) },
    onDisconnect: { addListener: (fn) => listeners.disconnect.push(fn) },
    postMessage(m) {
      host.posted.push(structuredClone(m));
      const reply = m.type === 'hello'
        ? [{ id: m.id, type: 'hello', success: true, data: { protocol: host.protocol } }]
        : (host.answer?.(m) ?? [{ id: m.id, success: true, data: { echo: m } }]);
      setImmediate(() => { for (const r of reply) for (const fn of listeners.message) fn(r); });
    },
    // exit is the host process ending.
    exit() { for (const fn of listeners.disconnect) fn(); },
    // deliver is the host sending m of its own accord.
    deliver(m) { for (const fn of listeners.message) fn(m); },
  };
  host.ports.push(port);
  return port;
}

const stored = {};
globalThis.chrome = {
  runtime: {
    id: ID,
    getURL: (p) => BASE + p,
    sendMessage: async () => {},
    connectNative,
  },
  scripting: {
    // The page mediator reports the document it ran in and its origin.
    executeScript: async ({ target }) => [{ documentId: `doc-of-tab-${target.tabId}`, result: 'https://example.com' }],
  },
  storage: {
    local: {
      get: async (keys) => Object.fromEntries(keys.filter((k) => k in stored).map((k) => [k, stored[k]])),
      set: async (o) => Object.assign(stored, o),
      remove: async (keys) => { for (const k of keys) delete stored[k]; },
    },
  },
};
const { onMessage, onConnect, hostRequests } = await import('../router.js');
const { native, PROTOCOL } = await import('../native.js');
host.protocol = PROTOCOL;

const pageSender = { id: ID, url: `${BASE}popup.html` };
const NOT_HANDLED = Symbol('not handled');

// send delivers msg from sender as chrome.runtime.onMessage would, and
// resolves with the answer, or NOT_HANDLED when the router took no part.
function send(msg, sender = pageSender) {
  return new Promise((resolve) => {
    if (onMessage(msg, sender, resolve) === false) resolve(NOT_HANDLED);
  });
}

// sentToHost is what reached the host since mark, the extension's own
// hello and audit checks aside.
const mark = () => host.posted.length;
const sentToHost = (from) => host.posted.slice(from).filter((m) => m.type !== 'hello' && !m.type.startsWith('audit-'));

test('a page\'s request of a type it may send reaches the host', async () => {
  const from = mark();
  const r = await send({ type: 'host', request: { type: 'list-agents', id: 'page-chose-this' } });
  assert.equal(r.success, true);
  const got = sentToHost(from);
  assert.equal(got.length, 1);
  assert.equal(got[0].type, 'list-agents');
  assert.match(got[0].id, /^x\d+$/, 'the id is the port\'s own, not the page\'s');
});

test('a page cannot have other types forwarded', async (t) => {
  for (const type of ['cancel-request', 'audit-consistency', 'browser-result', 'prompt-result', 'toString', '__proto__', 'constructor', '', undefined]) {
    await t.test(String(type), async () => {
      const from = mark();
      const r = await send({ type: 'host', request: { type } });
      assert.equal(r.success, false);
      assert.equal(r.code, 'unknown_type');
      assert.deepEqual(sentToHost(from), []);
    });
  }
});

test('a run is bound to the document its tab holds, whatever the page says', async () => {
  const from = mark();
  const r = await send({
    type: 'host',
    request: { type: 'run-agent', agentId: 'fetcher', tabId: 7, context: { tabId: 7, documentId: 'another-doc' }, origin: 'https://bank.example' },
  });
  const [run] = sentToHost(from);
  assert.ok(run, `nothing reached the host: ${JSON.stringify(r)}`);
  assert.equal(run.type, 'run-agent');
  // The binding names this run's injection, for the page's records.
  const { binding, ...bound } = run.context;
  assert.deepEqual(bound, { tabId: 7, documentId: 'doc-of-tab-7' });
  assert.match(binding, /^[0-9a-f-]{36}$/);
  assert.equal(run.origin, 'https://example.com');
  assert.equal(run.tabId, undefined);
});

test('who may reach which table', async (t) => {
  const listAgents = { type: 'host', request: { type: 'list-agents' } };
  for (const [name, msg, sender] of [
    ['a content script cannot reach the pages\' table', listAgents, { id: ID, url: 'https://evil.example/', tab: { id: 3, url: 'https://evil.example/' } }],
    ['an extension URL in a web page\'s tab is not a page', listAgents, { id: ID, url: `${BASE}popup.html`, tab: { id: 3, url: 'https://evil.example/' } }],
    ['another extension reaches nothing', listAgents, { id: 'abcdefghijklmnopabcdefghijklmnop', url: 'chrome-extension://abcdefghijklmnopabcdefghijklmnop/x.html' }],
    ['a message for the offscreen document is not the router\'s', { ...listAgents, target: 'offscreen' }, pageSender],
    ['a page cannot send what content scripts send', { type: 'layer1-denial', denial: {} }, pageSender],
    ['not an object', 'host', pageSender],
    ['a page\'s type that every object has', { type: 'constructor' }, pageSender],
    ['a content script\'s type that every object has', { type: 'toString' }, { id: ID, url: 'https://evil.example/', tab: { id: 3, url: 'https://evil.example/' } }],
  ]) {
    await t.test(name, async () => {
      const from = mark();
      assert.equal(await send(msg, sender), NOT_HANDLED);
      assert.deepEqual(sentToHost(from), []);
    });
  }
});

test('a content script writes no record of its own', async () => {
  // The page's refusals are recorded by the service worker in the run's
  // name (content.js reports them with the run's binding); a message of
  // the content-script world asking for a record is not handled at all.
  const from = mark();
  const r = await send(
    { type: 'layer1-denial', denial: { agentId: 'a', permission: 'page.write', code: 'permission_not_granted', context: { method: 'setText' } } },
    { id: ID, url: 'https://example.com/', tab: { id: 3, url: 'https://example.com/' } },
  );
  assert.equal(r, NOT_HANDLED);
  assert.deepEqual(sentToHost(from), []);
});

test('the host\'s requests the extension answers', () => {
  assert.deepEqual(Object.keys(hostRequests).sort(), ['browser-call', 'prompt', 'prompt-cancel', 'prompt-layer']);
});

test('a port from anything but an extension page, or of an unknown kind, is closed', async (t) => {
  for (const [name, portName, sender] of [
    ['unknown kind', 'shell:1', pageSender],
    ['a content script', 'request:1', { id: ID, url: 'https://evil.example/', tab: { id: 1, url: 'https://evil.example/' } }],
    ['a property of every object', 'constructor:1', pageSender],
  ]) {
    await t.test(name, () => {
      let closed = false;
      onConnect({ name: portName, sender, disconnect: () => { closed = true; }, onDisconnect: { addListener() {} }, onMessage: { addListener() {} } });
      assert.ok(closed);
    });
  }
});

test('a host of another protocol version is sent nothing but hello', async (t) => {
  for (const [name, protocol, says] of [
    ['newer', PROTOCOL + 1, 'update the extension'],
    ['older', PROTOCOL - 1, 'update nmhost'],
    ['none', undefined, 'did not report a protocol version'],
  ]) {
    await t.test(name, async () => {
      host.protocol = protocol;
      host.ports.at(-1).exit();
      const from = mark();
      const r = await send({ type: 'host', request: { type: 'list-agents' } });
      assert.equal(r.success, false);
      assert.equal(r.code, 'protocol_mismatch');
      assert.ok(r.error.includes(says), r.error);
      assert.deepEqual(host.posted.slice(from).map((m) => m.type), ['hello']);
    });
  }
  host.protocol = PROTOCOL;
  host.ports.at(-1).exit();
});

test('a reply in chunks is put together, whatever order they come in', async () => {
  const big = { items: 'ü'.repeat(3000) };
  host.answer = (m) => {
    const bytes = new TextEncoder().encode(JSON.stringify({ id: m.id, success: true, data: big }));
    const parts = [bytes.slice(0, 1000), bytes.slice(1000, 4001), bytes.slice(4001)].map((b) => Buffer.from(b).toString('base64'));
    return [2, 0, 1].map((seq) => ({ id: m.id, chunk: { seq, total: 3, data: parts[seq] } }));
  };
  try {
    const r = await native.request('list-agents');
    assert.deepEqual(r.data, big);
  } finally {
    host.answer = null;
  }
});

test('a host\'s request of a type every object has is not answered', async (t) => {
  await native.request('list-agents', {});
  const port = host.ports.at(-1);
  for (const type of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    await t.test(type, async () => {
      const from = mark();
      port.deliver({ id: 'h:0123456789abcdef:1', type });
      await new Promise(setImmediate);
      assert.deepEqual(host.posted.slice(from), []);
    });
  }
});
