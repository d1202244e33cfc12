// Shows one prompt, for one operation, a workflow layer's tasks or a
// workflow's whole plan, and
// sends the answer to the service worker. Closing the window without
// answering denies.
//
// The prompt is the host's message as it came (the service worker puts
// it in the URL); the answer carries the digest of it (shown.js), and the
// host takes the answer only for the prompt with that digest and id.
// A prompt withdrawn while it shows (its host process ended) says so,
// and its buttons go.
//
// A prompt opens over whatever the person was doing, often typing in a
// form. So no button is a default, and the decision buttons stay inert
// (disabled: neither focusable nor clickable, Enter and Space do nothing)
// until the window has been shown for INERT_MS, and again each time it
// regains focus, as browsers do with their own permission prompts.
import { shownDigest } from './shown.js';

const INERT_MS = 750;

const promptId = new URLSearchParams(location.search).get('id');
let details = {};
try {
  details = JSON.parse(decodeURIComponent(location.hash.slice(1)));
} catch {
  details = {};
}
const $ = (id) => document.getElementById(id);
// The digest of the prompt as received, computed once, before any answer.
const digest = shownDigest(details).catch(() => '');

// Characters that change how text around them reads without showing
// themselves: C0 and C1 controls, bidi embeddings, overrides, isolates and
// marks, zero-width and other invisible format characters. Shown as a
// visible \uXXXX, so "\u202e" in a selector cannot make the line read as
// another origin. The class names each such code point on purpose, controls
// and lone combining marks included: ESLint's rules against both are off here.
// eslint-disable-next-line no-control-regex, no-misleading-character-class
const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u115f\u1160\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\ufff9-\ufffb]/gu;

function escapeHidden(s) {
  return String(s).replace(HIDDEN, (c) => `\\u${c.codePointAt(0).toString(16).padStart(4, '0')}`);
}

// A long target keeps its start and its end (where an origin or a file
// name is): the middle goes, and the whole text is one click away.
const MAX_SHOWN = 160;

// agentText fills el with text an agent chose: escaped, isolated in a
// <bdi>, cut in the middle when long (the full text in a <details>).
function agentText(el, text) {
  const full = escapeHidden(text);
  const bdi = document.createElement('bdi');
  bdi.className = 'agent-text';
  if (full.length <= MAX_SHOWN) {
    bdi.textContent = full;
    el.replaceChildren(bdi);
    el.dataset.full = full;
    return;
  }
  const head = full.slice(0, 90);
  const tail = full.slice(-60);
  bdi.textContent = `${head} … ${tail}`;
  const more = document.createElement('details');
  const summary = document.createElement('summary');
  summary.textContent = `show all ${full.length} characters`;
  const all = document.createElement('bdi');
  all.className = 'agent-text full';
  all.textContent = full;
  more.append(summary, all);
  el.replaceChildren(bdi, more);
  el.dataset.full = full;
  el.dataset.truncated = 'true';
}

// describe is the exact target, never contents: page text and clipboard
// data appear only as a length.
function describe(target) {
  const t = target || {};
  const parts = [];
  if (t.method || t.url) parts.push(`${t.method || ''} ${t.url || ''}`.trim());
  if (t.selector) parts.push(`selector ${t.selector}`);
  if (t.origin) parts.push(`page ${t.origin}`);
  if (t.path) parts.push(`workspace file ${t.path}`);
  if (Array.isArray(t.paths) && t.paths.length) parts.push(`files ${t.paths.join(', ')}`);
  if (t.textLength) parts.push(`${t.textLength} ${t.textLength === 1 ? 'byte' : 'bytes'} of text`);
  return parts.join('; ') || '(none)';
}

// rememberAs says what an "always" answer would cover. The outside files
// of a shell read come as a JSON list, shown as the files themselves.
function rememberAs(d) {
  const r = String(d.rememberAs || '');
  if (r.startsWith('[')) {
    try {
      return `reading exactly ${JSON.parse(r).join(', ')}`;
    } catch {
      return r;
    }
  }
  return r || `every ${d.operation || '?'} by this agent`;
}

// taskBlock is one task of a layer or plan: a line naming its layer and
// task, then its agent, operation, class, exact target and set, one per
// row. A block per task rather than a column per field: a plan's wide
// table put the target column past the window's right edge, and a
// person approved tasks whose targets they never saw.
function taskBlock(t) {
  const li = document.createElement('li');
  li.className = 'task';
  const head = document.createElement('div');
  head.className = 'task-head';
  const task = document.createElement('span');
  task.className = 'mono';
  agentText(task, t.task || '');
  head.append(document.createTextNode(`layer ${String(t.layer || details.layer || '?')}, task `), task);
  const table = document.createElement('table');
  for (const [name, v] of [['agent', t.agentId], ['operation', t.operation], ['class', t.class], ['target', describe(t.target)], ['set', t.permissionSet || '(none named)']]) {
    const tr = document.createElement('tr');
    const th = document.createElement('th');
    th.textContent = name;
    const td = document.createElement('td');
    td.className = name === 'class' ? '' : 'mono';
    td.dataset.field = name;
    agentText(td, v || '');
    tr.append(th, td);
    table.append(tr);
  }
  li.append(head, table);
  return li;
}

// The buttons are the answers the host offered (details.offers, already
// narrowed by the service worker to what this kind of prompt can carry);
// the others stay hidden and inert.
const BUTTONS = ['allow-once', 'allow-session', 'allow-24h', 'always-allow', 'allow-and-log', 'deny', 'always-block'];
// A layer offers once or deny; a plan also "always" for that plan.
const KIND = !Array.isArray(details.tasks) ? BUTTONS : details.plan ? ['allow-once', 'always-allow', 'deny'] : ['allow-once', 'deny'];
let answers = (Array.isArray(details.offers) ? details.offers : ['allow-once', 'deny']).filter((a) => KIND.includes(a));
for (const a of answers) $(a).hidden = false;
if (Array.isArray(details.tasks)) {
  // A layer: one answer for all its listed tasks, and no "always": a
  // workflow's approval holds for this run of this layer only. A plan:
  // every task of every layer that needs a person, before anything runs;
  // "always" covers this exact plan and no other.
  $('single').hidden = true;
  $('layer').hidden = false;
  agentText($('workflow'), details.workflow || '?');
  if (details.plan) {
    $('layer-head').hidden = true;
    $('plan-head').hidden = false;
    $('plan-note').hidden = false;
    $('plan-layers').textContent = String(details.plan.layers || '?');
    agentText($('plan-hash'), String(details.plan.hash || '').slice(0, 16));
  } else {
    $('layer-no').textContent = String(details.layer || '?');
  }
  $('tasks').replaceChildren(...details.tasks.map(taskBlock));
  if (details.plan) $('always-allow').textContent = 'Always allow this plan';
} else {
  agentText($('agent'), details.agentId || '?');
  agentText($('operation'), details.operation || '?');
  $('reason').textContent = details.reason ? escapeHidden(`It ${String(details.reason).replace(/^it /, '')}.`) : '';
  $('class').textContent = String(details.class || '');
  $('permission').textContent = String(details.permission || '');
  agentText($('target'), describe(details.target));
  // The set is the ceiling on what this agent can ever be granted.
  $('permission-set').textContent = String(details.permissionSet || '(none named)');
  // The reach of an "always" answer: the method and canonical origin for a
  // fetch, the page's origin for a write, the outside files a shell
  // command reads, or the operation as a whole.
  agentText($('remember-as'), rememberAs(details));
}

// The inert period: arm() disables the buttons and enables them INERT_MS
// later; showing the window and each return of focus arm it again.
let live = false;
let timer = 0;
function arm() {
  live = false;
  clearTimeout(timer);
  for (const a of answers) $(a).disabled = true;
  document.body.dataset.inert = 'true';
  timer = setTimeout(() => {
    live = true;
    for (const a of answers) $(a).disabled = false;
    delete document.body.dataset.inert;
  }, INERT_MS);
}
window.addEventListener('focus', arm);
document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') arm(); });
// Enter and Space never answer while inert, whatever holds the focus.
document.addEventListener('keydown', (e) => {
  if (!live && (e.key === 'Enter' || e.key === ' ')) e.preventDefault();
}, true);
arm();

// The request this window answers: the host process's instance and the
// request's number.
agentText($('request-id'), String(details.id || '?'));

// withdrawnNow shows why this prompt no longer takes an answer, and
// takes its buttons away.
let withdrawnAlready = false;
function withdrawnNow(why) {
  withdrawnAlready = true;
  live = false;
  clearTimeout(timer);
  for (const a of answers) {
    $(a).disabled = true;
    $(a).hidden = true;
  }
  answers = [];
  const w = $('withdrawn');
  w.hidden = false;
  w.textContent = `This request was withdrawn: ${escapeHidden(why)}. An answer here counts for nothing; close this window.`;
  document.body.dataset.withdrawn = 'true';
}

for (const answer of answers) {
  $(answer).addEventListener('click', async () => {
    if (!live || withdrawnAlready) return;
    live = false;
    // about: what this window asked, for the record should the service
    // worker no longer hold the prompt (it restarted).
    const about = { id: details.id, agentId: details.agentId, permission: details.permission, operation: details.operation };
    const r = await chrome.runtime.sendMessage({ type: 'prompt-answer', promptId, answer, shown: await digest, about });
    if (r?.success) window.close();
    else withdrawnNow(r?.error || 'nobody waits for this answer any more');
  });
}

// How many more prompts wait behind this one, and whose: the queue is
// one for the whole browser, so the person knows that answering here
// brings the next window, and for which agent or workflow. The names are
// agent text, escaped and isolated like every other.
function showWaiting(m) {
  const n = Math.max(0, Math.floor(Number(m?.waiting) || 0));
  const q = $('queue');
  q.dataset.waiting = String(n);
  q.hidden = !(n > 0);
  if (!(n > 0)) {
    q.replaceChildren();
    return;
  }
  const parts = [document.createTextNode(`${n} more ${n === 1 ? 'request waits' : 'requests wait'} after this one: `)];
  const who = Array.isArray(m.who) ? m.who : [];
  who.forEach((w, i) => {
    if (i > 0) parts.push(document.createTextNode(', '));
    const c = Math.max(1, Math.floor(Number(w?.count) || 1));
    parts.push(document.createTextNode(`${c} from ${w?.kind === 'workflow' ? 'workflow' : 'agent'} `));
    const name = document.createElement('span');
    name.className = 'mono';
    agentText(name, String(w?.name ?? '?'));
    parts.push(name);
  });
  const others = Math.floor(Number(m.others) || 0);
  if (others > 0) parts.push(document.createTextNode(`${who.length ? ', and ' : ''}${others} from others`));
  parts.push(document.createTextNode('.'));
  q.replaceChildren(...parts);
}
chrome.runtime.onMessage.addListener((msg) => {
  if (msg?.type === 'prompt-queue' && msg.promptId === promptId) showWaiting(msg);
  if (msg?.type === 'prompt-withdrawn' && msg.promptId === promptId) withdrawnNow(String(msg.reason || 'withdrawn'));
});
chrome.runtime.sendMessage({ type: 'prompt-status', promptId }).then((r) => {
  if (r?.success) showWaiting(r);
  else if (r?.code === 'prompt_cancelled') withdrawnNow(String(r.error || 'withdrawn'));
}, () => {});
