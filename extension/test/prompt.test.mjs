// Unit tests of the prompt window's text and buttons (prompt.js): what an
// agent chose is shown escaped and isolated, long targets are cut in the
// middle, contents appear only as a length, only the offered answers show,
// and none answers while the window is inert. prompt.js is a page script;
// it runs here in a context of its own over a small stand-in for the page
// whose elements are read from prompt.html, so an id one file uses and
// the other lacks fails the test.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import vm from 'node:vm';

import { shownDigest } from '../shown.js';

// prompt.js is a module: its one import (shown.js's digest) is given to
// the context instead, the real one, so an answer's digest is checked as
// the host computes it.
const source = readFileSync(new URL('../prompt.js', import.meta.url), 'utf8')
  .replace(/^import \{ shownDigest \} from '\.\/shown\.js';$/m, '');
const html = readFileSync(new URL('../prompt.html', import.meta.url), 'utf8');

class Element {
  constructor(tag, attrs = '') {
    this.tagName = tag.toUpperCase();
    this.hidden = /\shidden[\s>]/.test(` ${attrs} `);
    this.disabled = /\sdisabled[\s>]/.test(` ${attrs} `);
    this.textContent = '';
    this.className = '';
    this.dataset = {};
    this.children = [];
    this.listeners = {};
  }
  replaceChildren(...c) { this.children = c; }
  setAttribute(k, v) { this[`@${k}`] = String(v); }
  append(...c) { this.children.push(...c); }
  addEventListener(type, fn) { (this.listeners[type] ||= []).push(fn); }
  click() { for (const fn of this.listeners.click || []) fn(); }
  // text is what a person sees in it: its own text and its children's.
  get text() { return [this.textContent, ...this.children.map((c) => c.text)].join(''); }
}

// open shows the prompt for details, as the service worker opens it, and
// returns the page, what it sent, and its timers to run by hand.
function open(details, { waiting = 0, who = [], others = 0, search = '?id=p1', chromeGives } = {}) {
  const byId = new Map();
  for (const m of html.matchAll(/<(\w+)([^>]*)\sid="([^"]+)"([^>]*)>([^<]*)/g)) {
    const e = new Element(m[1], m[2] + m[4]);
    // A button's label is its text.
    if (m[1] === 'button') e.textContent = m[5];
    byId.set(m[3], e);
  }
  let nowMs = 1e12;
  const sent = [];
  const timers = [];
  const docListeners = {};
  const winListeners = {};
  const document = {
    body: { dataset: {} },
    visibilityState: 'visible',
    getElementById: (id) => byId.get(id) || null,
    createElement: (tag) => new Element(tag),
    createTextNode: (text) => Object.assign(new Element('#text'), { textContent: text }),
    addEventListener: (type, fn) => { (docListeners[type] ||= []).push(fn); },
  };
  const window = { closed: false, addEventListener: (type, fn) => { (winListeners[type] ||= []).push(fn); }, close() { this.closed = true; } };
  const chrome = {
    runtime: {
      // Copied: objects made in the page's context have its own prototypes.
      sendMessage: async (m) => { sent.push(JSON.parse(JSON.stringify(m))); return m.type === 'prompt-status' ? { success: true, waiting, who, others } : undefined; },
      onMessage: { addListener: () => {} },
    },
    permissions: { request: async (p) => { sent.push({ type: 'chrome-permission', ...JSON.parse(JSON.stringify(p)) }); return chromeGives; } },
  };
  const context = {
    document, window, chrome, URLSearchParams,
    shownDigest,
    location: { search, hash: `#${encodeURIComponent(JSON.stringify(details))}` },
    setTimeout: (fn) => { timers.push(fn); return timers.length; },
    clearTimeout: () => {},
    setInterval: () => 0,
    // The page's clock, moved by hand (advance).
    Date: { now: () => nowMs },
    clearInterval: () => {},
  };
  vm.runInNewContext(source, context, { filename: 'prompt.js' });
  const $ = (id) => {
    const el = byId.get(id);
    assert.ok(el, `prompt.html has no #${id}`);
    return el;
  };
  const fire = (on, type, ev = {}) => { for (const fn of on[type] || []) fn(ev); };
  return {
    $, sent, window,
    // settle lets the inert period end.
    settle: () => { while (timers.length) timers.shift()(); },
    advance: (ms) => { nowMs += ms; },
    focus: () => fire(winListeners, 'focus'),
    key: (key, mods = {}) => { const ev = { key, ...mods, prevented: false, preventDefault() { this.prevented = true; } }; fire(docListeners, 'keydown', ev); return ev.prevented; },
  };
}

const fetchDetails = {
  agentId: 'fetcher', operation: 'network.fetch', permission: 'network.fetch', class: 'confirm',
  target: { method: 'POST', url: 'https://api.example.com/v1' }, rememberAs: 'POST https://api.example.com:443',
  offers: ['allow-once', 'always-allow', 'deny'],
};

const BUTTONS = ['allow-once', 'allow-session', 'allow-24h', 'always-allow', 'allow-and-log', 'deny', 'always-block'];

test('an operation\'s prompt names the agent, the operation and the exact target', () => {
  const p = open({ ...fetchDetails, reason: 'it changes something outside the browser' });
  assert.equal(p.$('agent').text, 'fetcher');
  assert.equal(p.$('operation').text, 'network.fetch');
  assert.equal(p.$('target').text, 'POST https://api.example.com/v1');
  assert.equal(p.$('remember-as').text, 'POST https://api.example.com:443');
  assert.equal(p.$('reason').textContent, 'It changes something outside the browser.');
  assert.equal(p.$('permission-set').textContent, '(none named)');
  assert.equal(p.$('layer').hidden, true);
  assert.equal(p.$('action').text, 'send a POST request to https://api.example.com/v1');
  assert.equal(p.$('countdown').dataset.left, '60');
});

test('the prompt leads with one sentence: the agent\'s name, what it wants, where', async (t) => {
  for (const [name, d, search, sentence] of [
    ['a heading', { operation: 'page.write.setElementText', target: { selector: 'h1', origin: 'http://127.0.0.1:8931', textLength: 5 } }, '?id=p1&who=Page+reader',
      'Page reader wants to change the heading of http://127.0.0.1:8931'],
    ['another element', { operation: 'page.write.setElementText', target: { selector: '#x\u202e', origin: 'https://a.example' } }, '?id=p1',
      'fetcher wants to change the element #x\\u202e of https://a.example'],
    ['a clipboard write', { operation: 'clipboard.write', target: { textLength: 2 } }, '?id=p1&who=Clip',
      'Clip wants to copy text to your clipboard (2 bytes)'],
    ['a name with an override', { operation: 'clipboard.read' }, '?id=p1&who=evil%E2%80%AEgood', 'evil\\u202egood wants to read your clipboard'],
  ]) {
    await t.test(name, () => {
      const p = open({ ...fetchDetails, ...d }, { search });
      assert.equal(`${p.$('agent').text} wants to ${p.$('action').text}`, sentence);
    });
  }
});

test('what an agent chose is escaped and isolated', async (t) => {
  for (const [name, selector, shown] of [
    ['a right-to-left override', '#a\u202egro.elpmaxe', '#a\\u202egro.elpmaxe'],
    ['a newline', 'a\nb', 'a\\u000ab'],
    ['a zero-width space', 'pay\u200bpal', 'pay\\u200bpal'],
    ['a bidi isolate', '\u2066x\u2069', '\\u2066x\\u2069'],
    ['a byte-order mark', '\ufeffx', '\\ufeffx'],
    ['a C1 control', 'x\u0085y', 'x\\u0085y'],
  ]) {
    await t.test(name, () => {
      const p = open({ ...fetchDetails, agentId: selector, target: { selector } });
      const agent = p.$('agent').children[0];
      assert.equal(agent.tagName, 'BDI');
      assert.equal(agent.textContent, shown);
      assert.equal(p.$('target').text, `selector ${shown}`);
    });
  }
});

test('a long target keeps its start and end, with the whole text one click away', () => {
  const url = `https://api.example.com/${'a'.repeat(300)}/end.json`;
  const p = open({ ...fetchDetails, target: { method: 'GET', url } });
  const target = p.$('target');
  const full = `GET ${url}`;
  const [cut, more] = target.children;
  assert.equal(cut.textContent, `${full.slice(0, 90)} … ${full.slice(-60)}`);
  assert.equal(target.dataset.truncated, 'true');
  assert.equal(target.dataset.full, full);
  assert.equal(more.tagName, 'DETAILS');
  assert.equal(more.children[0].textContent, `show all ${full.length} characters`);
  assert.equal(more.children[1].textContent, full);
});

test('contents are shown as a length, never as text', async (t) => {
  for (const [name, target, want] of [
    ['page text', { selector: '#notes', origin: 'https://example.com', textLength: 12, text: 'the secret' }, 'selector #notes; page https://example.com; 12 bytes of text'],
    ['one byte', { textLength: 1, data: 'x' }, '1 byte of text'],
    ['a workspace file', { path: 'notes/a.txt', content: 'secret' }, 'workspace file notes/a.txt'],
    ['a shell read of outside files', { paths: ['/etc/passwd', 'b'] }, 'files /etc/passwd, b'],
    ['nothing', {}, '(none)'],
  ]) {
    await t.test(name, () => {
      const shown = open({ ...fetchDetails, target }).$('target').text;
      assert.equal(shown, want);
      assert.ok(!shown.includes('secret'));
    });
  }
});

test('"always" of a shell read names the exact files', () => {
  const p = open({ ...fetchDetails, operation: 'shell.read', rememberAs: JSON.stringify(['/home/a/x', '/home/a/y']) });
  assert.equal(p.$('remember-as').text, 'reading exactly /home/a/x, /home/a/y');
  assert.equal(open({ ...fetchDetails, rememberAs: '' }).$('remember-as').text, 'every network.fetch by this agent');
});

test('only the offered answers show, and only known ones', async (t) => {
  for (const [name, offers, shown] of [
    ['the host\'s offers', ['allow-once', 'always-allow', 'deny'], ['allow-once', 'always-allow', 'deny']],
    ['an unknown answer is dropped', ['allow-once', 'allow-forever', 'deny'], ['allow-once', 'deny']],
    ['a property of every object is no answer', ['toString', '__proto__', 'deny'], ['deny']],
    ['no offers: once and deny', undefined, ['allow-once', 'deny']],
  ]) {
    await t.test(name, () => {
      const p = open({ ...fetchDetails, offers });
      assert.deepEqual(BUTTONS.filter((b) => !p.$(b).hidden), shown);
    });
  }
});

test('no answer is given while the window is inert', async () => {
  const p = open(fetchDetails);
  assert.ok(BUTTONS.every((b) => p.$(b).disabled), 'every button starts disabled');
  p.$('always-allow').click();
  assert.ok(p.key('Enter'), 'Enter is swallowed while inert');
  assert.ok(p.key(' '), 'Space is swallowed while inert');
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve)); // what an answer would take
  assert.deepEqual(p.sent.filter((m) => m.type === 'prompt-answer'), []);
  p.settle();
  assert.ok(!p.$('deny').disabled && !p.$('allow-once').disabled);
  assert.ok(p.$('allow-session').disabled, 'a button not offered stays disabled');
  assert.ok(p.key('Enter'), 'Enter presses nothing until keyboard answers are asked for');
  // Focus coming back makes it inert again.
  p.focus();
  assert.ok(p.$('deny').disabled);
  p.$('deny').click();
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve)); // what an answer would take
  assert.deepEqual(p.sent.filter((m) => m.type === 'prompt-answer'), []);
  p.settle();
  p.$('deny').click();
  // The answer goes once the digest of what was shown is computed
  // (crypto.subtle): a few turns of the event loop, bounded.
  for (let i = 0; i < 1000 && !p.sent.some((m) => m.type === 'prompt-answer'); i++) await new Promise((resolve) => setImmediate(resolve));
  const answers = p.sent.filter((m) => m.type === 'prompt-answer').map(({ type, promptId, answer, shown }) => ({ type, promptId, answer, shown }));
  assert.deepEqual(answers, [{ type: 'prompt-answer', promptId: 'p1', answer: 'deny', shown: await shownDigest(fetchDetails) }]);
  // A second click of the answered window sends nothing more.
  p.$('allow-once').click();
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(p.sent.filter((m) => m.type === 'prompt-answer').length, 1);
});

test('a workflow plan lists its tasks and offers "always" for that plan', () => {
  const p = open({
    workflow: 'wf\u202e1', plan: { layers: 3, hash: 'abcdef0123456789ffff' }, offers: ['allow-once', 'always-allow', 'deny'],
    tasks: [
      { layer: 1, task: 't1', agentId: 'fetcher', operation: 'network.fetch', class: 'confirm', target: { method: 'POST', url: 'https://x.example/' } },
      { layer: 2, task: 't2', agentId: 'writer', operation: 'page.write', class: 'confirm', target: { selector: '#a', textLength: 3 }, permissionSet: 'page' },
    ],
  });
  assert.equal(p.$('single').hidden, true);
  assert.equal(p.$('layer').hidden, false);
  assert.equal(p.$('plan-head').hidden, false);
  assert.equal(p.$('workflow').text, 'wf\\u202e1');
  assert.equal(p.$('plan-hash').text, 'abcdef0123456789');
  assert.equal(p.$('always-allow').textContent, 'Always allow this plan');
  // One block per task: its head, then a row per field.
  const blocks = p.$('tasks').children.map((li) => [li.children[0].text, ...li.children[1].children.map((tr) => tr.children.map((c) => c.text).join(': '))]);
  assert.deepEqual(blocks, [
    ['layer 1, task t1', 'agent: fetcher', 'operation: network.fetch', 'class: confirm', 'target: POST https://x.example/', 'set: (none named)'],
    ['layer 2, task t2', 'agent: writer', 'operation: page.write', 'class: confirm', 'target: selector #a; 3 bytes of text', 'set: page'],
  ]);
});

test('the window says how many more prompts wait, and whose', async () => {
  const p = open(fetchDetails, { waiting: 3, who: [{ kind: 'agent', name: 'fetcher' }, { kind: 'workflow', name: 'w\u202ef', count: 2 }] });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(p.$('queue').hidden, false);
  assert.equal(p.$('queue').dataset.waiting, '3');
  assert.equal(p.$('queue').text, '3 more requests wait after this one: 1 from agent fetcher, 2 from workflow w\\u202ef.');
  assert.deepEqual(p.sent[0], { type: 'prompt-status', promptId: 'p1' });
});

test('the window counts the askers it does not name', async () => {
  const p = open(fetchDetails, { waiting: 1, who: [], others: 1 });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(p.$('queue').text, '1 more request waits after this one: 1 from others.');
});

// settleAnswer waits the few turns of the event loop an answer takes.
async function answersSent(p) {
  for (let i = 0; i < 1000 && !p.sent.some((m) => m.type === 'prompt-answer'); i++) await new Promise((resolve) => setImmediate(resolve));
  return p.sent.filter((m) => m.type === 'prompt-answer').map((m) => m.answer);
}

test('a remembered answer takes two steps: pick it under More…, then confirm', async () => {
  const p = open(fetchDetails);
  p.settle();
  assert.equal(p.$('more').hidden, false);
  assert.equal(p.$('more-answers').hidden, true);
  p.$('more').click();
  assert.equal(p.$('more-answers').hidden, false);
  assert.equal(p.$('more')['@aria-expanded'], 'true');
  assert.ok(p.$('remember-confirm').disabled, 'nothing to confirm before a pick');
  p.$('always-allow').click();
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(p.sent.filter((m) => m.type === 'prompt-answer'), [], 'a pick is not an answer');
  assert.equal(p.$('remember-confirm').textContent, 'Confirm: Always allow');
  p.$('remember-confirm').click();
  assert.deepEqual(await answersSent(p), ['always-allow']);
});

test('a prompt with only once and deny has no More…', () => {
  const p = open({ ...fetchDetails, offers: ['allow-once', 'deny'] });
  assert.equal(p.$('more').hidden, true);
});

test('keys answer only after Alt+Shift+K, given when the keys before it stopped', async () => {
  const p = open(fetchDetails);
  p.settle();
  for (const b of ['allow-once', 'deny', 'more']) assert.equal(p.$(b).tabIndex, -1, `${b} is out of the Tab order`);
  // Typing straight into the gesture: refused.
  p.key('a');
  p.key('K', { altKey: true, shiftKey: true, code: 'KeyK' });
  assert.equal(p.$('deny').tabIndex, -1, 'a gesture typed among other keys does not count');
  assert.ok(p.key(' '), 'Space presses nothing');
  // After a pause.
  p.advance(1000);
  p.key('K', { altKey: true, shiftKey: true, code: 'KeyK' });
  assert.equal(p.$('deny').tabIndex, 0);
  assert.equal(p.$('allow-once').tabIndex, 0);
  assert.equal(p.key('Enter'), false, 'Enter now presses the focused button');
  // Focus coming back puts keyboard answers off again.
  p.focus();
  assert.equal(p.$('deny').tabIndex, -1);
});

test('Escape denies once the window is live', async () => {
  const p = open(fetchDetails);
  p.key('Escape');
  for (let i = 0; i < 50; i++) await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(p.sent.filter((m) => m.type === 'prompt-answer'), [], 'not while inert');
  p.settle();
  p.key('Escape');
  assert.deepEqual(await answersSent(p), ['deny']);
});

test('an Allow that needs a Chrome permission asks Chrome in the same click', async (t) => {
  const clip = { ...fetchDetails, operation: 'clipboard.write', permission: 'clipboard.write', target: { textLength: 2 } };
  await t.test('Chrome gives it: the answer goes', async () => {
    const p = open(clip, { search: '?id=p1&need=clipboardWrite', chromeGives: true });
    assert.equal(p.$('chrome-needs').hidden, false);
    p.settle();
    p.$('allow-once').click();
    assert.deepEqual(await answersSent(p), ['allow-once']);
    assert.deepEqual(p.sent.find((m) => m.type === 'chrome-permission'), { type: 'chrome-permission', permissions: ['clipboardWrite'] });
  });
  await t.test('Chrome refuses: nothing is answered, and the window says why', async () => {
    const p = open(clip, { search: '?id=p1&need=clipboardWrite', chromeGives: false });
    p.settle();
    p.$('allow-once').click();
    for (let i = 0; i < 200; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(p.sent.filter((m) => m.type === 'prompt-answer'), []);
    assert.equal(p.$('chrome-problem').hidden, false);
    p.$('deny').click();
    assert.deepEqual(await answersSent(p), ['deny']);
  });
  await t.test('Deny asks Chrome nothing', async () => {
    const p = open(clip, { search: '?id=p1&need=clipboardWrite', chromeGives: true });
    p.settle();
    p.$('deny').click();
    assert.deepEqual(await answersSent(p), ['deny']);
    assert.equal(p.sent.filter((m) => m.type === 'chrome-permission').length, 0);
  });
});
