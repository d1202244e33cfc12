// Shows one prompt, for one operation, a workflow layer's tasks or a
// workflow's whole plan, and sends the answer to the service worker.
// Closing the window without answering denies.
//
// The prompt is the host's message as it came (the service worker puts
// it in the URL); the answer carries the digest of it (shown.js), and the
// host takes the answer only for the prompt with that digest and id. The
// query adds what the service worker knows beside it: the agent's name
// (who) and the Chrome permission the operation needs (need).
// A prompt withdrawn while it shows (its host process ended) says so,
// and its buttons go.
//
// The window leads with one sentence ("Page reader wants to change the
// heading of http://127.0.0.1:8931"), then the exact target; the host's
// terms (operation, safety class, permission set) are under Details. It
// offers Allow once, Deny and More…; the answers that outlast this
// request are behind More…, each picked and then confirmed.
//
// A prompt opens over whatever the person was doing, often typing in a
// form. So no button is a default, none is reached by Tab, and a key
// never presses one: keyboard answers come only after a distinct
// gesture (Alt+Shift+K, accepted once the window is live and no other key
// came for QUIET_MS), which puts the buttons in the Tab order with the
// focus on Deny. The buttons also stay inert (disabled) until the window
// has been shown for INERT_MS, and again each time it regains focus, as
// browsers do with their own permission prompts. Escape denies.
import { shownDigest } from './shown.js';

const INERT_MS = 750;
const QUIET_MS = 500;

const query = new URLSearchParams(location.search);
const promptId = query.get('id');
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
  if (t.tool) {
    // An MCP tool: its server's name for it, what the server says it
    // does, and the hashes an answer is bound to (docs/mcp.md).
    parts.push(`tool ${t.tool.server}.${t.tool.tool} (definition ${String(t.tool.definition || '').slice(0, 12)}, arguments sha256 ${String(t.tool.argsSha256 || '').slice(0, 12)})`);
    if (t.tool.description) parts.push(`its server says: ${t.tool.description}`);
  }
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
// the others stay hidden and inert. Allow once and Deny show at once;
// the remembered ones behind More….
const BUTTONS = ['allow-once', 'allow-session', 'allow-24h', 'always-allow', 'allow-and-log', 'deny', 'always-block'];
const REMEMBERED = new Set(['allow-session', 'allow-24h', 'always-allow', 'allow-and-log', 'always-block']);
// A layer offers once or deny; a plan also "always" for that plan.
const KIND = !Array.isArray(details.tasks) ? BUTTONS : details.plan ? ['allow-once', 'always-allow', 'deny'] : ['allow-once', 'deny'];
let answers = (Array.isArray(details.offers) ? details.offers : ['allow-once', 'deny']).filter((a) => KIND.includes(a));
for (const a of answers) $(a).hidden = false;
const hasMore = answers.some((a) => REMEMBERED.has(a));
$('more').hidden = !hasMore;
// Every control that answers, or leads to an answer.
const controls = () => [...answers, ...(hasMore ? ['more', 'remember-confirm'] : [])];

// Where an agent's page write lands, in words: a heading, the title, or
// the element its selector names.
function elementWords(selector) {
  const s = String(selector || '').trim();
  if (/^h[1-6]$/i.test(s)) return ['the heading'];
  if (/^title$/i.test(s)) return ['the title'];
  return ['the element ', { agent: s }];
}

// action is the rest of the prompt's sentence, "wants to ...": text
// parts and, as {agent}, text the agent chose (shown escaped, isolated).
function action(d) {
  const t = d.target || {};
  const at = t.origin ? [' on ', { agent: t.origin }] : [];
  const bytes = t.textLength ? ` (${t.textLength} ${t.textLength === 1 ? 'byte' : 'bytes'})` : '';
  const op = String(d.operation || '');
  if (op === 'page.write.setElementText') return ['change ', ...elementWords(t.selector), ...(t.origin ? [' of ', { agent: t.origin }] : [])];
  if (op.startsWith('page.read')) return ['read the page', ...at];
  if (op === 'clipboard.write') return [`copy text to your clipboard${bytes}`];
  if (op === 'clipboard.read') return ['read your clipboard'];
  if (op.startsWith('network.')) {
    const m = String(t.method || 'GET').toUpperCase();
    return m === 'GET' ? ['fetch ', { agent: t.url || t.host || '?' }] : [`send a ${m} request${bytes} to `, { agent: t.url || t.host || '?' }];
  }
  if (op.startsWith('notifications')) return ['show you a notification'];
  if (op.startsWith('workspace.') || op.startsWith('shell.')) {
    const files = t.path ? [{ agent: t.path }] : Array.isArray(t.paths) && t.paths.length ? [{ agent: t.paths.join(', ') }] : ['files'];
    return [/write|create|delete|remove/.test(op) ? 'change ' : 'read ', ...files, ' in its workspace'];
  }
  if (op.startsWith('memory')) return ['use its notes'];
  if (op === 'mcp.call' && t.tool) return ['call the tool ', { agent: t.tool.tool }, ' of your MCP server ', { agent: t.tool.server }];
  return ['use ', { agent: op || '?' }];
}

function fillSentence(el, parts) {
  el.replaceChildren(...parts.map((p) => {
    if (typeof p === 'string') return document.createTextNode(p);
    const span = document.createElement('span');
    span.className = 'mono';
    agentText(span, p.agent);
    return span;
  }));
}

if (Array.isArray(details.tasks)) {
  // A layer: one answer for all its listed tasks, and no "always": a
  // workflow's approval holds for this run of this layer only. A plan:
  // every task of every layer that needs a person, before anything runs;
  // "always" covers this exact plan and no other.
  $('single').hidden = true;
  $('layer').hidden = false;
  document.title = 'agentgate: a workflow asks';
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
  // The name the agent's profile gives, from the service worker; its id
  // when it has none. Both are the agent's own text.
  agentText($('agent'), query.get('who') || details.agentId || '?');
  fillSentence($('action'), action(details));
  agentText($('agent-id'), details.agentId || '?');
  agentText($('operation'), details.operation || '?');
  $('reason').textContent = details.reason ? escapeHidden(`It ${String(details.reason).replace(/^it /, '')}.`) : '';
  if (details.preview) {
    // The start of what the agent will write, as it chose it: shown
    // escaped and isolated like all its text.
    $('preview-line').hidden = false;
    agentText($('preview'), String(details.preview));
  }
  const changed = details.target && details.target.tool && details.target.tool.changed;
  if (changed) {
    // The tool is not what it was when it was listed before: what
    // changed comes before any answer (already escaped by the host, and
    // again here).
    $('reason').textContent += escapeHidden(` It changed since it was listed before: ${String(changed)}.`);
  }
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

// A Chrome permission the operation needs and Chrome has not given yet
// (the service worker names it): Allow asks Chrome for it in the same
// click, and the window says so beforehand. An Allow that Chrome then
// refuses answers nothing: the window says why, and Deny stays.
const need = /^[A-Za-z]{1,40}$/.test(query.get('need') || '') ? query.get('need') : '';
if (need) {
  $('chrome-needs').hidden = false;
  $('chrome-needs').textContent = `Allowing also asks Chrome to let agentgate use ${need}: without it, this cannot work.`;
}

// The inert period: arm() disables the buttons and enables them INERT_MS
// later; showing the window and each return of focus arm it again, and
// put keyboard answers off again.
let live = false;
let timer = 0;
let keyboard = false;
let lastKeyAt = -Infinity;
function setKeyboard(on) {
  keyboard = on;
  for (const a of controls()) $(a).tabIndex = on ? 0 : -1;
  document.body.dataset.keyboard = String(on);
}
function arm() {
  live = false;
  clearTimeout(timer);
  setKeyboard(false);
  for (const a of controls()) $(a).disabled = true;
  document.body.dataset.inert = 'true';
  timer = setTimeout(() => {
    live = true;
    for (const a of controls()) $(a).disabled = a === 'remember-confirm' && !picked;
    delete document.body.dataset.inert;
  }, INERT_MS);
}
window.addEventListener('focus', arm);
document.addEventListener('visibilitychange', () => { if (document.visibilityState === 'visible') arm(); });

const pressing = (e) => e.key === 'Enter' || e.key === ' ' || e.key === 'Spacebar';
// Keys: Enter and Space never press a button until keyboard answers were
// asked for (and never while inert); Alt+Shift+K asks for them, when the
// window is live and the keys before it stopped QUIET_MS ago; Escape
// denies.
document.addEventListener('keydown', (e) => {
  const now = Date.now();
  const quiet = now - lastKeyAt >= QUIET_MS;
  lastKeyAt = now;
  if (e.altKey && e.shiftKey && String(e.code || e.key).toLowerCase().endsWith('k')) {
    e.preventDefault?.();
    if (live && quiet && !withdrawnAlready) {
      setKeyboard(true);
      $('deny').focus?.();
    }
    return;
  }
  if (e.key === 'Escape' && live && answers.includes('deny')) {
    e.preventDefault?.();
    send('deny');
    return;
  }
  if (pressing(e) && (!live || !keyboard)) e.preventDefault();
}, true);
// Space presses a button on its release: that too, unless keyboard
// answers were asked for.
document.addEventListener('keyup', (e) => { if (pressing(e) && (!live || !keyboard)) e.preventDefault(); }, true);
arm();

// The request this window answers: the host process's instance and the
// request's number.
agentText($('request-id'), String(details.id || '?'));

// The countdown: the host denies an unanswered prompt after its
// timeoutMs; the window shows how long is left, and that silence denies.
const deadline = Date.now() + Math.max(1000, Number(details.timeoutMs) || 60000);
function tick() {
  const left = Math.max(0, Math.ceil((deadline - Date.now()) / 1000));
  const c = $('countdown');
  c.dataset.left = String(left);
  c.textContent = left > 0 ? `${left} s left to answer. No answer counts as Deny.` : 'No answer in time: denied.';
}
tick();
const ticker = setInterval(tick, 1000);

// withdrawnNow shows why this prompt no longer takes an answer, and
// takes its buttons away.
let withdrawnAlready = false;
function withdrawnNow(why) {
  withdrawnAlready = true;
  live = false;
  clearTimeout(timer);
  clearInterval(ticker);
  for (const a of controls()) {
    $(a).disabled = true;
    $(a).hidden = true;
  }
  $('more-answers').hidden = true;
  answers = [];
  $('countdown').textContent = '';
  const w = $('withdrawn');
  w.hidden = false;
  w.textContent = `This request was withdrawn: ${escapeHidden(why)}. An answer here counts for nothing; close this window.`;
  document.body.dataset.withdrawn = 'true';
}

// send gives the answer, once.
let sent = false;
async function send(answer) {
  if (!live || withdrawnAlready || sent) return;
  sent = true;
  live = false;
  // about: what this window asked, for the record should the service
  // worker no longer hold the prompt (it restarted).
  const about = { id: details.id, agentId: details.agentId, permission: details.permission, operation: details.operation };
  const r = await chrome.runtime.sendMessage({ type: 'prompt-answer', promptId, answer, shown: await digest, about });
  if (r?.success) window.close();
  else withdrawnNow(r?.error || 'nobody waits for this answer any more');
}

// allowing asks Chrome first for what the operation needs: called first
// thing in the click, while it still counts as the person's gesture.
async function allowing(answer) {
  if (!need || answer === 'always-block') return true;
  let given = false;
  try {
    given = await chrome.permissions.request({ permissions: [need] });
  } catch {
    given = false;
  }
  if (!given) {
    const p = $('chrome-problem');
    p.hidden = false;
    p.textContent = `Chrome did not let agentgate use ${need}, so allowing cannot work: Deny, or press Allow again and accept Chrome's question.`;
    document.body.dataset.chromeRefused = need;
  }
  return given;
}

let picked = '';
for (const answer of answers) {
  $(answer).addEventListener('click', async () => {
    if (!live || withdrawnAlready || sent) return;
    if (REMEMBERED.has(answer)) {
      // The first step: picked, not given.
      picked = answer;
      for (const a of answers) if (REMEMBERED.has(a)) $(a).setAttribute?.('aria-pressed', String(a === answer));
      $('remember-confirm').disabled = false;
      $('remember-confirm').textContent = `Confirm: ${$(answer).textContent}`;
      $('remember-confirm').dataset.answer = answer;
      return;
    }
    if (answer !== 'deny' && !(await allowing(answer))) return;
    send(answer);
  });
}
$('remember-confirm').addEventListener('click', async () => {
  if (!picked || !live || withdrawnAlready || sent) return;
  if (!(await allowing(picked))) return;
  send(picked);
});
$('more').addEventListener('click', () => {
  if (!live) return;
  const open = $('more-answers').hidden;
  $('more-answers').hidden = !open;
  $('more').setAttribute?.('aria-expanded', String(open));
  fitWindow();
});
$('details').addEventListener?.('toggle', () => fitWindow());

// fitWindow sizes the prompt's own window to its content, within the
// screen: nothing cut off at the bottom, no empty space.
async function fitWindow() {
  if (!chrome.windows?.getCurrent) return;
  try {
    const w = await chrome.windows.getCurrent();
    if (w.type !== 'popup') return;
    const frame = window.outerHeight - window.innerHeight;
    const want = Math.min(screen.availHeight - 20, document.documentElement.scrollHeight + frame + 4);
    if (Math.abs(want - w.height) > 4) await chrome.windows.update(w.id, { height: want });
  } catch {
    // A window being closed: nothing to fit.
  }
}
fitWindow();

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
