// The denial-log viewer. Every value shown comes from agents or the pages
// they touched, so it is hostile text: it reaches the DOM only through
// textContent and attributes, never as markup.

import * as audit from './audit.js';
import { wireAudit } from './auditpage.js';

const $ = (id) => document.getElementById(id);

// The token arrives in the URL's fragment (#token=...), which the browser
// never sends to a server. It is kept in this tab's sessionStorage (this
// origin only, port included, gone with the tab), taken out of the address
// bar, and sent only where the page puts it on purpose: the Authorization
// header and the websocket's token subprotocol. No cookie carries it, since
// a browser sends cookies to every port of 127.0.0.1.
const tokenKey = 'nmhost-viewer-token';
const token = takeToken();

function takeToken() {
  let fromURL = new URLSearchParams(location.hash.slice(1)).get('token');
  if (fromURL !== null) history.replaceState(null, '', location.pathname + location.search);
  // base64url only: anything else is a mangled copy, and would not even
  // make a valid websocket subprotocol.
  if (fromURL && !/^[A-Za-z0-9_-]+$/.test(fromURL)) fromURL = '';
  try {
    if (fromURL) sessionStorage.setItem(tokenKey, fromURL);
    return fromURL || sessionStorage.getItem(tokenKey) || '';
  } catch {
    return fromURL || ''; // storage disabled: this load works, a reload needs the URL again
  }
}

const noToken = 'No valid token: open the URL that `nmhost serve` printed (http://127.0.0.1:PORT/#token=...).';
const palette = ['#0969da', '#cf222e', '#1a7f37', '#8250df', '#bc4c00', '#1b7c83', '#6e7781'];
const maxChartAgents = palette.length - 1; // the last colour is "other agents"

const state = {
  rows: new Map(),     // id -> denial: the loaded page plus live arrivals
  nextBeforeId: 0,     // cursor of the next older page, 0 when none
  generation: 0,       // bumps on every filter change; stale replies are dropped
  selected: 0,         // id of the denial whose agent the panel shows
  renderQueued: false,
};

// filters reads the form into the API's query parameters.
function filters() {
  const f = {};
  const agent = $('filter-agent').value.trim();
  const permission = $('filter-permission').value;
  const code = $('filter-code').value.trim();
  const since = $('filter-since').value;
  const until = $('filter-until').value;
  const q = $('filter-search').value.trim();
  if (agent) f.agentId = agent;
  if (permission) f.permission = permission;
  if (code) f.code = code;
  if (since) f.since = String(new Date(since).getTime());
  if (until) f.until = String(new Date(until).getTime());
  if (q) f.q = q;
  return f;
}

// matches applies the filters to a live denial the way the server does.
function matches(d, f) {
  if (f.agentId && d.agentId !== f.agentId) return false;
  if (f.permission && d.permission !== f.permission) return false;
  if (f.code && d.code !== f.code) return false;
  if (f.since && d.timestamp < Number(f.since)) return false;
  if (f.until && d.timestamp >= Number(f.until)) return false;
  if (f.q) {
    const needle = f.q.toLowerCase();
    const c = d.context || {};
    const fields = [d.agentId, d.permission, d.code, c.url, c.reason, c.method, c.layer, ...Object.values(c.details || {})];
    if (!fields.some((v) => typeof v === 'string' && v.toLowerCase().includes(needle))) return false;
  }
  return true;
}

// authFetch sends a request with the token and never with cookies.
async function authFetch(path, init = {}) {
  const r = await fetch(path, {
    ...init, credentials: 'omit', headers: { ...init.headers, Authorization: 'Bearer ' + token },
  });
  if (r.ok) return r;
  const body = await r.json().catch(() => ({}));
  throw new Error(r.status === 401 ? noToken : `${body.code || r.status}: ${body.error || r.statusText}`);
}

async function api(path, init) {
  return (await authFetch(path, init)).json();
}

function query(f, extra) {
  return new URLSearchParams({ ...f, ...extra }).toString();
}

async function reload() {
  const gen = ++state.generation;
  const f = filters();
  state.rows.clear();
  state.nextBeforeId = 0;
  scheduleRender();
  await loadPage(gen, f, {});
}

async function loadPage(gen, f, cursor) {
  let page;
  try {
    page = await api('/api/denials?' + query(f, { limit: '200', ...cursor }));
  } catch (e) {
    if (gen === state.generation) $('table-note').textContent = 'Could not load the log: ' + e.message;
    return;
  }
  if (gen !== state.generation) return;
  $('table-note').textContent = '';
  for (const d of page.denials) state.rows.set(d.id, d);
  state.nextBeforeId = page.nextBeforeId || 0;
  scheduleRender();
}

function scheduleRender() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  requestAnimationFrame(() => { state.renderQueued = false; render(); });
}

const timeFormat = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });

function target(d) {
  const c = d.context || {};
  return c.url || (c.details && (c.details.operation || c.details.import)) || '';
}

function cell(tr, text, cls) {
  const td = tr.insertCell();
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

let lastRendered = new Set();

function render() {
  const rows = [...state.rows.values()].sort((a, b) => b.id - a.id);
  const tbody = $('denials').tBodies[0];
  const fresh = new Set();
  const body = document.createDocumentFragment();
  for (const d of rows) {
    const tr = document.createElement('tr');
    tr.dataset.id = String(d.id);
    tr.dataset.agent = d.agentId;
    if (lastRendered.size && !lastRendered.has(d.id)) tr.classList.add('new');
    if (d.id === state.selected) tr.classList.add('selected');
    const time = new Date(d.timestamp);
    cell(tr, timeFormat.format(time), 'time').title = time.toISOString();
    const agentCell = tr.insertCell();
    agentCell.className = 'agent';
    const link = document.createElement('button');
    link.type = 'button';
    link.className = 'link';
    link.textContent = d.agentId;
    link.title = 'profile and grants of this agent';
    link.addEventListener('click', () => showAgent(d));
    agentCell.append(link);
    cell(tr, d.permission);
    cell(tr, d.code, 'code');
    cell(tr, target(d), 'target');
    cell(tr, (d.context && d.context.reason) || '', 'reason');
    body.append(tr);
    fresh.add(d.id);
  }
  tbody.replaceChildren(body);
  lastRendered = fresh;
  $('load-older').hidden = !state.nextBeforeId;
  if (!rows.length && !$('table-note').textContent) $('table-note').textContent = 'No denials match.';
  else if (rows.length && $('table-note').textContent === 'No denials match.') $('table-note').textContent = '';
  drawChart(rows);
  fillSuggestions(rows);
}

const svgNS = 'http://www.w3.org/2000/svg';

// drawChart draws denials per agent over the span of the loaded rows as
// stacked bars, one colour per agent (the busiest few, then "other").
function drawChart(rows) {
  const svg = $('chart');
  const legend = $('chart-legend');
  const W = 720, H = 140, top = 16, bottom = 18, buckets = 36;
  const parts = [];
  if (!rows.length) {
    svg.replaceChildren();
    legend.replaceChildren();
    return;
  }
  const counts = new Map();
  for (const d of rows) counts.set(d.agentId, (counts.get(d.agentId) || 0) + 1);
  const agents = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([a]) => a);
  const shown = agents.slice(0, maxChartAgents);
  const colour = (a) => palette[shown.includes(a) ? shown.indexOf(a) : palette.length - 1];
  let t0 = Infinity, t1 = -Infinity;
  for (const d of rows) { t0 = Math.min(t0, d.timestamp); t1 = Math.max(t1, d.timestamp); }
  const span = Math.max(t1 - t0, 1000);
  const grid = Array.from({ length: buckets }, () => new Map());
  for (const d of rows) {
    const b = Math.min(buckets - 1, Math.floor(((d.timestamp - t0) / span) * buckets));
    const key = shown.includes(d.agentId) ? d.agentId : '';
    grid[b].set(key, (grid[b].get(key) || 0) + 1);
  }
  const peak = Math.max(...grid.map((m) => [...m.values()].reduce((s, n) => s + n, 0)), 1);
  const bw = W / buckets;
  grid.forEach((m, i) => {
    let y = H - bottom;
    for (const key of [...shown, '']) {
      const n = m.get(key);
      if (!n) continue;
      const h = ((H - top - bottom) * n) / peak;
      y -= h;
      const r = document.createElementNS(svgNS, 'rect');
      r.setAttribute('x', String(i * bw + 1));
      r.setAttribute('y', String(y));
      r.setAttribute('width', String(Math.max(bw - 2, 1)));
      r.setAttribute('height', String(h));
      r.setAttribute('fill', key ? colour(key) : palette[palette.length - 1]);
      const title = document.createElementNS(svgNS, 'title');
      title.textContent = `${key || 'other agents'}: ${n}`;
      r.append(title);
      parts.push(r);
    }
  });
  for (const [x, t, anchor] of [[2, t0, 'start'], [W - 2, t1, 'end']]) {
    const label = document.createElementNS(svgNS, 'text');
    label.setAttribute('x', String(x));
    label.setAttribute('y', String(H - 4));
    label.setAttribute('text-anchor', anchor);
    label.textContent = timeFormat.format(new Date(t));
    parts.push(label);
  }
  // The axes in words: the vertical one counts denials in a bar's time,
  // the horizontal one is time, from the oldest loaded denial to the newest.
  const secs = Math.max(1, Math.round(span / buckets / 1000));
  for (const [x, y, anchor, text] of [[2, 12, 'start', `denials per ${secs} s (highest bar: ${peak})`], [W / 2, H - 4, 'middle', 'time →']]) {
    const label = document.createElementNS(svgNS, 'text');
    label.setAttribute('x', String(x));
    label.setAttribute('y', String(y));
    label.setAttribute('text-anchor', anchor);
    label.textContent = text;
    parts.push(label);
  }
  svg.setAttribute('aria-label', `${rows.length} denials by ${agents.length} agents, ${timeFormat.format(new Date(t0))} to ${timeFormat.format(new Date(t1))}, in bars of ${secs} s`);
  svg.replaceChildren(...parts);
  const items = shown.map((a) => [a, colour(a), counts.get(a)]);
  if (agents.length > shown.length) {
    items.push(['other agents', palette[palette.length - 1], agents.slice(shown.length).reduce((s, a) => s + counts.get(a), 0)]);
  }
  legend.replaceChildren(...items.map(([name, c, n]) => {
    const li = document.createElement('li');
    li.style.setProperty('--swatch', c);
    li.textContent = `${name} (${n})`;
    return li;
  }));
}

const known = { agents: new Set(), codes: new Set() };

function fillSuggestions(rows) {
  let changed = false;
  for (const d of rows) {
    if (!known.agents.has(d.agentId)) { known.agents.add(d.agentId); changed = true; }
    if (!known.codes.has(d.code)) { known.codes.add(d.code); changed = true; }
  }
  if (!changed) return;
  const options = (set) => [...set].sort().map((v) => { const o = document.createElement('option'); o.value = v; return o; });
  $('agent-ids').replaceChildren(...options(known.agents));
  $('codes').replaceChildren(...options(known.codes));
}

// showAgent opens the panel of the profile and grants behind a denial.
async function showAgent(d) {
  state.selected = d.id;
  scheduleRender();
  const panel = $('agent-panel');
  panel.hidden = false;
  $('agent-title').textContent = d.agentId;
  $('agent-denial').textContent = `Denial #${d.id}: ${d.permission} refused with ${d.code}.`;
  $('agent-message').textContent = '';
  $('agent-profile').replaceChildren();
  $('agent-grants').tBodies[0].replaceChildren();
  let rec;
  try {
    rec = await api('/api/agents/' + encodeURIComponent(d.agentId));
  } catch (e) {
    $('agent-message').textContent = e.message.startsWith('unknown_agent')
      ? 'This agent is not installed (any more): it holds no grants.' : 'Could not load the agent: ' + e.message;
    return;
  }
  if (state.selected !== d.id) return;
  showRecord(rec, d);
  showAnswers(d.agentId);
}

// showAnswers lists the agent's remembered answers, each with its scope,
// its end, its last use and the code it holds for, with a revoke button,
// and the uses of its allow-and-log answers.
async function showAnswers(agentId) {
  const tbody = $('agent-answers').tBodies[0];
  tbody.replaceChildren();
  $('agent-digest').textContent = '';
  let list, digest;
  try {
    const q = '?' + new URLSearchParams({ agentId }).toString();
    [list, digest] = await Promise.all([api('/api/preferences' + q), api('/api/preferences/digest' + q)]);
  } catch (e) {
    $('agent-digest').textContent = 'Could not load the remembered answers: ' + e.message;
    return;
  }
  const when = (ms) => timeFormat.format(new Date(ms));
  tbody.replaceChildren(...(list.preferences || []).map((p) => {
    const tr = document.createElement('tr');
    tr.dataset.id = String(p.id);
    cell(tr, p.operation);
    cell(tr, p.target || 'every ' + p.operation);
    cell(tr, `${p.answer} (${p.scope})`);
    cell(tr, p.expiresAt ? when(p.expiresAt) : p.sessionId ? 'with session ' + p.sessionId : 'when revoked');
    cell(tr, p.lastUsed ? `${when(p.lastUsed)} (${p.uses} uses)` : 'never');
    cell(tr, (p.moduleSha256 || 'no code').slice(0, 12));
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'revoke';
    b.textContent = 'Revoke';
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        await api('/api/preferences/revoke', {
          method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ preferenceId: p.id }),
        });
        showAnswers(agentId);
      } catch (e) {
        b.disabled = false;
        $('agent-digest').textContent = 'Revoke failed: ' + e.message;
      }
    });
    tr.insertCell().append(b);
    return tr;
  }));
  const lines = (digest.digest || []).map((g) => `${g.operation}: ${g.count} uses allowed and logged, the last ${g.lastUsed ? when(g.lastUsed) : 'never'}`);
  $('agent-digest').textContent = lines.length ? lines.join('; ') : (list.preferences || []).length ? '' : 'No remembered answers.';
}

function showRecord(rec, d) {
  const p = rec.profile || {};
  const caps = p.capabilities || {};
  const facts = [
    ['Name', p.name || ''], ['Version', p.version || ''], ['Author', p.author || ''],
    ['Module', rec.moduleSha256 ? rec.moduleSha256.slice(0, 16) + '…' : 'none'],
    // The ceiling on the grants below; an inferred set says how sure.
    ['Permission set', !p.permissionSet ? 'none named'
      : p.permissionSource === 'inferred'
        ? `${p.permissionSet} (inferred, confidence ${Number(p.permissionConfidence || 0).toFixed(2)})`
        : `${p.permissionSet} (manual)`],
    ['Network', caps.networkAccess ? 'on' : 'off'],
    ['Allowed hosts', (caps.allowedHosts || []).join(', ') || 'none'],
    ['DOM access', caps.domAccess || 'none'],
    ['Requested', [...(p.permissions?.required || []), ...(p.permissions?.optional || []).map((x) => x + ' (optional)')].join(', ') || 'nothing'],
  ];
  $('agent-profile').replaceChildren(...facts.filter(([, v]) => v).flatMap(([k, v]) => {
    const dt = document.createElement('dt'); dt.textContent = k;
    const dd = document.createElement('dd'); dd.textContent = v;
    return [dt, dd];
  }));
  const tbody = $('agent-grants').tBodies[0];
  const grants = rec.grants || [];
  tbody.replaceChildren(...grants.map((g) => {
    const tr = document.createElement('tr');
    tr.dataset.permission = g.permission;
    if (g.permission === d.permission) tr.classList.add('behind');
    cell(tr, g.permission);
    cell(tr, g.source);
    cell(tr, timeFormat.format(new Date(g.grantedAt)), 'time');
    const b = document.createElement('button');
    b.type = 'button';
    b.className = 'revoke';
    b.textContent = 'Revoke';
    b.addEventListener('click', () => revoke(rec.profile.agentId, g.permission, b, d));
    tr.insertCell().append(b);
    return tr;
  }));
  const held = grants.some((g) => g.permission === d.permission);
  // A denial that named no permission (a link or a protocol refusal)
  // has no grant to point at.
  $('agent-message').textContent = !d.permission
    ? 'This denial named no permission: no grant of the agent was checked.'
    : held
      ? `The highlighted grant of ${d.permission} is the one this denial was checked against.`
      : `The agent holds no grant of ${d.permission}.`;
}

// revoke asks for a second click instead of a dialog, then revokes.
async function revoke(agentId, permission, button, d) {
  if (button.dataset.armed !== 'yes') {
    button.dataset.armed = 'yes';
    button.textContent = 'Click again to revoke';
    setTimeout(() => { if (button.isConnected) { button.dataset.armed = ''; button.textContent = 'Revoke'; } }, 4000);
    return;
  }
  button.disabled = true;
  try {
    const r = await api('/api/agents/' + encodeURIComponent(agentId) + '/revoke', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ permission }),
    });
    showRecord(r.agent, d);
    $('agent-message').textContent = `Revoked ${permission} from ${agentId}.`;
  } catch (e) {
    button.disabled = false;
    $('agent-message').textContent = 'Revoke failed: ' + e.message;
  }
}

// exportAs downloads every record the filters select. A plain link cannot
// carry the Authorization header, so the page fetches the export with it
// and saves the reply through a Blob URL. The whole export is held in
// memory meanwhile; for very large logs use the API directly (docs/viewer.md).
async function exportAs(format, button) {
  button.disabled = true;
  $('export-status').textContent = 'exporting…';
  try {
    const r = await authFetch('/api/denials/export?' + query(filters(), { format }));
    const blob = await r.blob();
    const named = /filename="([A-Za-z0-9._-]+)"/.exec(r.headers.get('Content-Disposition') || '');
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = named ? named[1] : `nmhost-denials.${format}`;
    document.body.append(a);
    a.click();
    a.remove();
    // The download has started from the URL; free it a little later, as
    // some browsers still read it after click returns.
    setTimeout(() => URL.revokeObjectURL(a.href), 60000);
    $('export-status').textContent = `saved ${a.download}`;
  } catch (e) {
    $('export-status').textContent = 'Export failed: ' + e.message;
  } finally {
    button.disabled = false;
  }
}

// connect opens the live tail and reconnects with backoff when it drops.
// The token goes in the second subprotocol offered: a browser cannot set
// headers on a websocket. The server selects only the first.
function connect(delay = 500) {
  const status = $('live-status');
  const ws = new WebSocket(`ws://${location.host}/ws`, ['nmhost.viewer.v1', 'nmhost.token.' + token]);
  ws.addEventListener('message', (ev) => {
    let m;
    try { m = JSON.parse(ev.data); } catch { return; }
    if (m.type === 'hello') {
      status.textContent = 'live';
      status.className = 'status live';
      delay = 500;
      // From here on every new denial arrives live; everything up to
      // m.lastId is in the store. Loading now leaves no gap between the two,
      // including whatever was written while disconnected.
      reload();
    } else if (m.type === 'denial' && m.denial && !m.sessionId) {
      if (matches(m.denial, filters())) {
        state.rows.set(m.denial.id, m.denial);
        scheduleRender();
      }
    }
  });
  ws.addEventListener('close', () => {
    status.textContent = 'reconnecting';
    status.className = 'status down';
    setTimeout(() => connect(Math.min(delay * 2, 10000)), delay);
  });
}

function debounce(fn, ms) {
  let t;
  return () => { clearTimeout(t); t = setTimeout(fn, ms); };
}

function init() {
  const changed = debounce(reload, 150);
  for (const id of ['filter-agent', 'filter-permission', 'filter-code', 'filter-since', 'filter-until', 'filter-search']) {
    $(id).addEventListener('input', changed);
    $(id).addEventListener('change', changed);
  }
  $('filters').addEventListener('submit', (e) => { e.preventDefault(); reload(); });
  $('load-older').addEventListener('click', () => loadPage(state.generation, filters(), { beforeId: String(state.nextBeforeId) }));
  $('agent-close').addEventListener('click', () => { $('agent-panel').hidden = true; state.selected = 0; scheduleRender(); });
  for (const format of ['jsonl', 'csv']) {
    const b = $('export-' + format);
    b.addEventListener('click', () => exportAs(format, b));
  }
  if (!token) {
    $('live-status').textContent = 'no token';
    $('live-status').className = 'status down';
    $('table-note').textContent = noToken;
    return;
  }
  reload();
  connect();
  const checkAudit = () => audit.show(token, $('audit-status'), $('audit-restart'));
  $('audit-restart').addEventListener('click', () => { audit.forget(); checkAudit(); });
  checkAudit();
  wireAudit(token);
}

init();
