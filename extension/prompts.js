// Asks the user about an operation the host says needs confirmation: a
// small window shows the agent, the operation, its class and the exact
// target; closed or unanswered within the host's timeout means deny.
//
// One window at a time for the whole browser: prompts of every agent,
// run, workflow and host process wait in one queue. Two windows would
// otherwise open focused in the same place, and a person answering the
// top one cannot tell which request, or whose, it is for. The others wait
// in order, and the shown window says how many wait behind it and whose
// they are.
//
// The host withdraws a prompt (prompt-cancel) when the run it belongs to
// ends or its time runs out: the window closes, and an answer that still
// arrives for it is refused and recorded as prompt_cancelled, never
// passed on. When the host process that asked ends (its port closes),
// every prompt it opened is withdrawn at once the same way, except that
// the shown window stays and says why: its answer would otherwise be
// posted to the next host process, which has requests of its own.
//
// The window gets the host's prompt exactly as it came, and answers with
// the digest of what it received (shown.js); the host takes an answer
// only with that digest and the prompt's id.
import { native } from './native.js';
import { shownDigest } from './shown.js';
import { chromePermissionFor } from './chromeperms.js';

// Every answer a prompt of each kind can ever carry. What one prompt
// offers is the host's `offers`, within these; the host refuses anything
// it did not offer (answer_not_offered), so these only keep a window from
// showing a button the host would refuse anyway.
const ANSWERS = new Set(['allow-once', 'allow-session', 'allow-24h', 'always-allow', 'allow-and-log', 'deny', 'always-block']);
const LAYER_ANSWERS = new Set(['allow-once', 'deny']);
const PLAN_ANSWERS = new Set(['allow-once', 'always-allow', 'deny']);

// offered is what this prompt shows: the host's offers that its kind
// can carry, in the host's order. A host that names none gets once and
// deny.
function offered(m, known) {
  const list = Array.isArray(m.offers) ? m.offers.filter((a) => known.has(a)) : ['allow-once', 'deny'];
  return [...new Set(list)];
}

// How long past the host's own timeout a prompt waits for its
// prompt-cancel before denying by itself (a host that went quiet).
const BACKSTOP_MS = 2000;

const byHostId = new Map(); // the host's request id -> entry
const byPromptId = new Map(); // the window's prompt id -> entry
// Every prompt not settled yet, in the order they came: the first shows.
const queue = [];
// Withdrawn prompts by prompt id, for the late answer's record; bounded.
const withdrawn = new Map();
const MAX_WITHDRAWN = 256;

// NO_REPLY tells native.js not to answer the host: a withdrawn prompt has
// nobody waiting for it there.
export const NO_REPLY = { noReply: true };

// prompt shows the host's prompt m of host process conn.
export async function prompt(m, conn) {
  return ask(conn, m, { kind: 'agent', name: String(m.agentId ?? '?') }, new Set(offered(m, ANSWERS)));
}

// A workflow layer's prompt: one window listing every task of the layer
// that needs a person (agent, operation, exact target). It offers allow
// once or deny for the whole layer; no "always". A plan's prompt (layer 0,
// with "plan") lists those tasks of every layer before anything runs, and
// also offers "always" for that exact plan: the host keys it by the plan's
// hash, so any change to one of its side effects asks again.
export async function promptLayer(m, conn) {
  const plan = m.plan && typeof m.plan === 'object';
  return ask(conn, m, { kind: 'workflow', name: String(m.workflow || '?') }, new Set(offered(m, plan ? PLAN_ANSWERS : LAYER_ANSWERS)));
}

// ask queues the prompt m (its window shows m itself, as the host sent
// it: the digest it answers with is of exactly that) and resolves with
// the answer for the host. who names the asker for the queue's line.
function ask(conn, m, who, allowed) {
  return new Promise((resolve) => {
    const e = { conn, hostId: String(m.id), who, promptId: crypto.randomUUID(), details: m, allowed, resolve, windowId: null, shown: false, done: false };
    e.timer = setTimeout(() => finish(e, 'deny'), Math.max(1000, Number(m.timeoutMs) || 60000) + BACKSTOP_MS);
    byHostId.set(e.hostId, e);
    byPromptId.set(e.promptId, e);
    queue.push(e);
    if (queue.length === 1) show(e);
    else tellWaiting();
  });
}

// The window's width; its height follows its content (prompt.js sizes
// it once shown), from a first guess.
const WIDTH = 520;

// agentName is the name an installed agent's profile gives, for the
// prompt's sentence; '' when it has none or the host cannot say.
async function agentName(agentId) {
  try {
    const r = await native.request('list-agents', {}, { timeoutMs: 5000 });
    const a = (r?.data?.agents || []).find((x) => x.profile?.agentId === agentId);
    return typeof a?.profile?.name === 'string' ? a.profile.name.slice(0, 80) : '';
  } catch {
    return '';
  }
}

// chromeNeed is the Chrome permission the prompt's operation needs and
// Chrome has not given: its Allow asks for it (prompt.js).
async function chromeNeed(m) {
  const p = chromePermissionFor(String(m.permission || '')) || chromePermissionFor(String(m.operation || ''));
  if (!p) return '';
  try {
    return (await chrome.permissions.contains({ permissions: [p] })) ? '' : p;
  } catch {
    return p;
  }
}

// over places a window of width w and height h over the browser window
// the person used last, near its top: the prompt opens where they look,
// not in a corner of the screen.
async function over(w, h) {
  try {
    const b = await chrome.windows.getLastFocused({ windowTypes: ['normal'] });
    if (!Number.isInteger(b?.left) || !Number.isInteger(b?.width)) return {};
    return { left: Math.max(0, b.left + Math.round((b.width - w) / 2)), top: Math.max(0, b.top + Math.min(96, Math.round((b.height - h) / 4))) };
  } catch {
    return {};
  }
}

async function show(e) {
  e.shown = true;
  const q = new URLSearchParams({ id: e.promptId });
  if (!e.details.tasks) {
    const [who, need] = await Promise.all([agentName(String(e.details.agentId || '')), chromeNeed(e.details)]);
    if (who) q.set('who', who);
    if (need) q.set('need', need);
  }
  const url = chrome.runtime.getURL(`prompt.html?${q}#${encodeURIComponent(JSON.stringify(e.details))}`);
  const height = e.details.tasks ? 600 : 420;
  try {
    const win = await chrome.windows.create({ url, type: 'popup', width: WIDTH, height, focused: true, ...(await over(WIDTH, height)) });
    e.windowId = win.id;
    // Answered or withdrawn while the window was being made.
    if (e.done) chrome.windows.remove(win.id).catch(() => {});
  } catch {
    finish(e, 'deny');
  }
}

// finish settles a prompt once: its answer goes to the host (or nothing,
// when withdrawn), its window closes (unless keepWindow: it says why it
// was withdrawn), and the agent's next prompt shows. shown is the
// window's digest of the prompt; a deny the service worker gives itself
// (the window closed, or never opened, or time ran out) carries the
// digest of the prompt it denies.
function finish(e, answer, { reply = true, shown, keepWindow = false } = {}) {
  if (e.done) return;
  e.done = true;
  clearTimeout(e.timer);
  if (byHostId.get(e.hostId) === e) byHostId.delete(e.hostId);
  byPromptId.delete(e.promptId);
  const at = queue.indexOf(e);
  if (at >= 0) queue.splice(at, 1);
  if (e.windowId !== null && !keepWindow) chrome.windows.remove(e.windowId).catch(() => {});
  if (!reply) e.resolve(NO_REPLY);
  else if (shown === undefined) e.resolve(shownDigest(e.details).then((d) => ({ answer: 'deny', shown: d }), () => ({ answer: 'deny' })));
  else e.resolve({ answer: e.allowed.has(answer) ? answer : 'deny', shown });
  if (queue.length && !queue[0].shown) show(queue[0]);
  tellWaiting();
}

// At most this many askers are named in the queue's line; the rest are
// counted.
const MAX_NAMED = 5;

// waitingNow is what the shown window says of the queue: how many prompts
// wait behind it (waiting) and whose (who: each asker with its count, in
// the order their first prompt came; others: the prompts of askers past
// MAX_NAMED).
function waitingNow() {
  const who = [];
  let others = 0;
  for (const x of queue.slice(1)) {
    const w = who.find((y) => y.kind === x.who.kind && y.name === x.who.name);
    if (w) w.count++;
    else if (who.length < MAX_NAMED) who.push({ ...x.who, count: 1 });
    else others++;
  }
  return { waiting: Math.max(0, queue.length - 1), who, others };
}

// tellWaiting tells the shown window how many prompts wait behind it, and
// whose.
function tellWaiting() {
  if (!queue.length) return;
  chrome.runtime.sendMessage({ type: 'prompt-queue', promptId: queue[0].promptId, ...waitingNow() }).catch(() => {});
}

// withdraw puts e among the withdrawn prompts, for the late answer's
// record and for its window's question (promptStatus).
function withdraw(e, why) {
  withdrawn.set(e.promptId, { details: e.details, why });
  if (withdrawn.size > MAX_WITHDRAWN) withdrawn.delete(withdrawn.keys().next().value);
}

// withdrawAll withdraws every prompt the host process conn opened, when
// its port closed: nothing will take their answers. Their windows stay
// and say why; the queued ones go unseen.
export function withdrawAll(conn, reason) {
  const why = `nmhost, which asked, ended before you answered (${String(reason || 'the host exited').slice(0, 200).replace(/\.+$/, '')})`;
  // The queued ones first: finishing a shown one would show the next.
  const mine = [...byPromptId.values()].filter((x) => x.conn === conn).sort((a, b) => a.shown - b.shown);
  for (const e of mine) {
    withdraw(e, why);
    const open = e.shown;
    finish(e, 'deny', { reply: false, keepWindow: true });
    if (open) chrome.runtime.sendMessage({ type: 'prompt-withdrawn', promptId: e.promptId, reason: why }).catch(() => {});
  }
}
native.onDisconnect(withdrawAll);

// Closing the window denies now, not after the timeout.
export function onWindowRemoved(windowId) {
  for (const e of byPromptId.values()) {
    if (e.windowId === windowId) finish(e, 'deny');
  }
}

// promptCancel is the host's prompt-cancel: the prompt's run ended or its
// time ran out. Its window closes (or it leaves the queue unseen).
export function promptCancel(m, conn) {
  const e = byHostId.get(String(m.id));
  if (!e || e.conn !== conn) return NO_REPLY;
  withdraw(e, String(m.reason || 'withdrawn by the host'));
  finish(e, 'deny', { reply: false });
  return NO_REPLY;
}

// promptStatus is what a prompt window asks when it opens: how many wait
// behind it, or why it was withdrawn.
export function promptStatus(promptId) {
  const e = byPromptId.get(promptId);
  if (!e) {
    const w = withdrawn.get(promptId);
    return w ? { success: false, code: 'prompt_cancelled', error: w.why } : { success: false, code: 'unknown_prompt', error: 'no prompt waits for this answer' };
  }
  return queue[0] === e ? { success: true, ...waitingNow() } : { success: true, waiting: 0, who: [], others: 0 };
}

// promptAnswered takes a window's answer and its digest of the prompt
// (shown). An answer for a withdrawn prompt is refused and put in the
// host's denial log (with its audit record): the person clicked for a
// run, or a host process, that is over. So is one for a prompt this
// service worker never held (it restarted since the window opened: its
// host process ended with it), named by the window's own prompt (about).
export async function promptAnswered(promptId, answer, shown, about) {
  const e = byPromptId.get(promptId);
  if (e?.shown) {
    finish(e, answer, { shown: String(shown ?? '') });
    return { success: true };
  }
  // Kept: the window (or a copy of it) still asks why (promptStatus).
  let w = withdrawn.get(promptId);
  if (!w && about && typeof about === 'object' && !e) {
    w = { details: about, why: 'the extension restarted since this window opened, and the host process that asked ended with it' };
  }
  if (!w) return { success: false, code: 'unknown_prompt', error: 'no prompt waits for this answer' };
  const d = w.details;
  const error = `answered after the prompt was withdrawn: ${w.why}`;
  if (typeof d.agentId === 'string' && d.agentId) {
    await native.request('log-denial', {
      agentId: d.agentId, permission: String(d.permission || ''), code: 'prompt_cancelled',
      context: { reason: error, details: { operation: String(d.operation || ''), answer: String(answer).slice(0, 40), promptId: String(d.id).slice(0, 80) } },
    }).catch((err) => console.warn('agentgate: late answer not logged:', err.message || err));
  }
  return { success: false, code: 'prompt_cancelled', error };
}
