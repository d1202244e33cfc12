// The options page reads everything from the host: agents, grants,
// remembered answers and the denial log. It keeps no state of its own but
// the current session's id (sessions.js, shared with the popup);
// the audit trail's checkpoint is the service worker's (audit.js), which
// checks it again each time this page opens, and the line follows every
// later check.
import { host, el, showHostProblem } from './host.js';
import { chromePermissionFor, askChromePermission } from './chromeperms.js';
import { startPython } from './pyclient.js';
import { currentSession, setCurrentSession, startSession } from './sessions.js';
import { showAudit, followAudit } from './auditview.js';
import { installSheet, chips } from './consent.js';

const $ = (id) => document.getElementById(id);

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

async function loadAgents() {
  const r = await host('list-agents');
  if (!r.success) throw new Error(`${r.code}: ${r.error}`);
  const agents = r.data.agents || [];
  const held = new Set((await chrome.permissions.getAll()).permissions || []);
  const py = agents.filter((a) => a.profile.runtime === 'python' && a.moduleSha256);
  const chosen = $('py-agent').value;
  $('py-agent').replaceChildren(...py.map((a) => el('option', a.profile.agentId, { value: a.profile.agentId })));
  if (py.some((a) => a.profile.agentId === chosen)) $('py-agent').value = chosen;
  fill($('agents').tBodies[0], agents.map((a) => {
    const p = a.profile;
    const grants = el('td');
    for (const g of a.grants || []) {
      const b = el('button', `revoke ${g.permission}`, { 'data-agent': p.agentId, 'data-permission': g.permission, class: 'revoke' });
      b.addEventListener('click', async () => {
        await host('revoke', { agentId: p.agentId, permission: g.permission });
        refresh();
      });
      grants.append(b, ' ');
      // A grant the extension cannot serve until Chrome gives it an
      // optional permission: the person's click here asks Chrome.
      const needs = chromePermissionFor(g.permission);
      if (needs && !held.has(needs)) {
        const c = el('button', `let Chrome give ${needs}`, { 'data-agent': p.agentId, 'data-permission': g.permission, class: 'chrome-allow' });
        c.addEventListener('click', async () => {
          await askChromePermission(g.permission);
          refresh();
        });
        grants.append(c, ' ');
      }
    }
    // A revoke stays until the user grants again, here or with
    // `nmhost grant AGENT PERMISSION`; re-installing does not undo it.
    for (const perm of a.revoked || []) {
      const b = el('button', `grant ${perm} again`, { 'data-agent': p.agentId, 'data-permission': perm, class: 'regrant' });
      b.addEventListener('click', async () => {
        // Chrome's permission first, while the click still counts as the
        // person's gesture; the grant stands even if Chrome's is refused
        // (the calls that need it are then refused, named).
        await askChromePermission(perm).catch(() => false);
        await host('grant', { agentId: p.agentId, permission: perm });
        refresh();
      });
      grants.append(b, ' ');
    }
    const tr = el('tr', null, { 'data-agent': p.agentId });
    // The set is the ceiling on the grants beside it; an inferred one
    // says how sure the host was.
    const set = p.permissionSet
      ? `${p.permissionSet} (${p.permissionSource === 'inferred' ? `inferred, ${Number(p.permissionConfidence || 0).toFixed(2)}` : 'manual'})`
      : '(none named)';
    const test = el('button', 'run self-test', { 'data-agent': p.agentId, class: 'selftest' });
    test.addEventListener('click', () => selfTest(p.agentId));
    tr.append(el('td', p.agentId), el('td', set, { class: 'permission-set' }), el('td', (p.permissions.required || []).join(', ')),
      el('td', (p.capabilities.allowedHosts || []).join(', ') || '(none)'), el('td', p.capabilities.domAccess), grants, el('td'));
    tr.lastChild.append(test);
    return tr;
  }));
  await loadExamples(new Set(agents.map((a) => a.profile.agentId)));
  const sel = $('fetch-agent');
  const keep = sel.value;
  sel.replaceChildren(...agents.map((a) => el('option', a.profile.agentId, { value: a.profile.agentId })));
  if (keep) sel.value = keep;
}

// loadExamples lists the bundled examples with what each asks for, and
// an Install button that opens its sheet: nothing is installed, and
// nothing granted, before the person confirms there.
async function loadExamples(installed) {
  let r;
  try {
    r = await chrome.runtime.sendMessage({ type: 'examples' });
  } catch {
    return;
  }
  const examples = r?.data?.examples || [];
  fill($('examples'), examples.map(({ profile: p }) => {
    const li = el('li', null, { 'data-agent': p.agentId, class: 'example' });
    const here = installed.has(p.agentId);
    li.dataset.installed = String(here);
    const head = el('div', null, { class: 'example-head' });
    head.append(el('strong', p.name || p.agentId), ' ', el('span', p.runtime === 'python' ? 'Python' : 'WebAssembly', { class: 'muted small' }));
    const act = here ? el('span', 'installed', { class: 'muted' }) : el('button', 'Install…', { class: 'install', 'data-agent': p.agentId, 'aria-label': `Install ${p.name || p.agentId}…` });
    if (!here) {
      act.addEventListener('click', async () => {
        const res = await installSheet(p, (prof) => chrome.runtime.sendMessage({ type: 'install-example', agentId: prof.agentId }));
        if (res.installed && res.chromeRefused.length) {
          $('status').textContent = `${p.name || p.agentId} is installed; Chrome did not give ${res.chromeRefused.join(', ')}, so those calls are refused until you allow it below.`;
        }
        refresh();
      });
    }
    head.append(' ', act);
    li.append(head, el('div', p.description || '', { class: 'small' }), chips(p));
    return li;
  }));
}

const when = (ms) => new Date(ms).toLocaleString();

// ends says when a remembered answer stops deciding.
function ends(p) {
  if (p.expiresAt) return when(p.expiresAt);
  if (p.sessionId) return `with session ${p.sessionId}`;
  return 'when you forget it';
}

async function loadPrefs() {
  const r = await host('list-preferences');
  if (!r.success) return;
  fill($('prefs').tBodies[0], (r.data.preferences || []).map((p) => {
    const b = el('button', 'forget', { class: 'forget' });
    b.addEventListener('click', async () => {
      await host('revoke-preference', { preferenceId: p.id });
      refresh();
    });
    const tr = el('tr', null, { 'data-id': String(p.id), 'data-scope': p.scope || '' });
    tr.append(el('td', p.agentId), el('td', p.operation), el('td', p.target || `every ${p.operation}`), el('td', p.answer),
      el('td', p.scope || ''), el('td', ends(p)), el('td', p.lastUsed ? `${when(p.lastUsed)} (${p.uses} uses)` : 'never'),
      el('td', (p.moduleSha256 || '(no code)').slice(0, 12), { class: 'mono' }), el('td'));
    tr.lastChild.append(b);
    return tr;
  }));
}

async function loadDigest() {
  const r = await host('preference-digest');
  if (!r.success) return;
  fill($('digest').tBodies[0], (r.data.digest || []).map((d) => {
    const tr = el('tr', null, { 'data-agent': d.agentId, 'data-count': String(d.count) });
    const latest = (d.latest || []).map((u) => `${when(u.at)} ${u.target || ''}`.trim()).join('; ');
    tr.append(el('td', d.agentId), el('td', d.operation), el('td', String(d.count)),
      el('td', d.lastUsed ? when(d.lastUsed) : 'never'), el('td', latest || '(none yet)', { class: 'mono' }));
    return tr;
  }));
}

// selfTest runs the host's check-agent for one agent and shows one line
// per rule and the verdict.
async function selfTest(agentId) {
  $('selftest').hidden = false;
  $('selftest-agent').textContent = agentId;
  const verdict = $('selftest-verdict');
  verdict.textContent = 'running...';
  delete verdict.dataset.pass;
  fill($('selftest-results').tBodies[0], []);
  const r = await host('check-agent', { agentId });
  if (!r.success) {
    verdict.textContent = `could not run: ${r.code}: ${r.error}`;
    verdict.dataset.pass = 'error';
    return;
  }
  const rep = r.data;
  fill($('selftest-results').tBodies[0], (rep.results || []).map((x) => {
    const mark = x.skip ? 'skip' : (x.ok ? 'ok' : 'FAIL');
    const tr = el('tr', null, { 'data-ok': mark });
    tr.append(el('td', mark), el('td', x.class), el('td', x.tried, { class: 'mono' }),
      el('td', x.skip ? '' : x.want), el('td', x.skip || x.got));
    return tr;
  }));
  verdict.textContent = `${rep.pass ? 'pass' : 'FAIL'}: ${rep.fired} rules fired, ${rep.failed} did not, ${rep.skipped} skipped (level ${rep.level})`;
  verdict.dataset.pass = String(rep.pass);
}

async function loadDenials() {
  const r = await host('list-denials', { limit: 50 });
  if (!r.success) return;
  fill($('denials').tBodies[0], (r.data.denials || []).map((d) => {
    const tr = el('tr', null, { 'data-id': String(d.id), 'data-code': d.code });
    tr.append(el('td', new Date(d.timestamp).toLocaleString()), el('td', d.agentId), el('td', d.permission),
      el('td', d.code, { class: 'code' }), el('td', d.context?.url || d.context?.details?.operation || '', { class: 'mono' }),
      el('td', d.context?.reason || ''));
    return tr;
  }));
}

async function refresh() {
  showHostProblem('host-problem');
  try {
    await loadAgents();
    await Promise.all([loadPrefs(), loadDigest(), loadDenials()]);
    $('status').textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    $('status').textContent = `the host is not reachable: ${e.message || e}`;
  }
}

async function checkAudit(type = 'audit-check') {
  const line = $('audit-status');
  let o;
  try {
    o = await chrome.runtime.sendMessage({ type });
  } catch (e) {
    o = { state: 'unknown', code: 'internal_error', error: String(e.message || e) };
  }
  showAudit(line, o);
  $('audit-restart').hidden = o?.state !== 'broken';
}
followAudit($('audit-status'), (o) => { $('audit-restart').hidden = o?.state !== 'broken'; });

$('refresh').addEventListener('click', refresh);
$('audit-restart').addEventListener('click', () => checkAudit('audit-restart'));
$('fetch-go').addEventListener('click', async () => {
  const out = $('fetch-result');
  out.textContent = 'fetching...';
  const r = await host('network-fetch', { agentId: $('fetch-agent').value, url: $('fetch-url').value });
  if (r.success) {
    const d = r.data;
    out.textContent = `${d.status} ${d.statusText} ${d.finalUrl}\n${d.body.length} characters (${d.bodyEncoding})\n\n${d.body.slice(0, 2000)}`;
  } else {
    out.textContent = `denied: ${r.code}: ${r.error}`;
  }
  out.dataset.done = r.success ? 'ok' : r.code;
  out.dataset.length = r.success ? String(r.data.body.length) : '0';
  loadDenials();
});
$('py-run').addEventListener('click', async () => {
  const out = $('py-output');
  out.textContent = 'loading Python...';
  delete out.dataset.status;
  let first = true;
  // A run without a session would get one that ends with it: start the
  // current session first when there is none (sessions.js).
  const sessionId = (await currentSession()) || (await startSession());
  // The run is in the offscreen document (pyhost.js): it goes on if this
  // page closes.
  const { done } = await startPython({ agentId: $('py-agent').value, input: $('py-input').value, sessionId,
    onOutput: (text) => { if (first) { out.textContent = ''; first = false; } out.textContent += text; } });
  const r = await done;
  out.textContent = r.output + (r.code ? `\n[${r.code}] ${r.error || ''}` : '');
  if (r.sessionId) await setCurrentSession(r.sessionId);
  await showSession();
  out.dataset.status = r.status;
  loadDenials();
});

// A workflow started here: the whole plan is asked about in one prompt
// before anything runs; each task's end shows as it comes. It runs in the
// current session (a new one when none is current), and ends with this
// page.
const WF_EXAMPLE = {
  id: 'fetch-and-post',
  tasks: [
    { id: 'page', call: { agentId: 'fetcher', operation: 'network.fetch', url: 'https://example.com/' } },
    { id: 'size', dependsOn: ['page'], code: { op: 'code:access', expr: 'size(r.page.body)' } },
  ],
};
$('wf-json').value = JSON.stringify(WF_EXAMPLE, null, 2);
$('wf-run').addEventListener('click', async () => {
  const out = $('wf-output');
  delete out.dataset.status;
  // A graph is JSON (it starts with "{"); anything else is an agent's
  // script, TypeScript or JavaScript, which the host converts to its
  // workflow before anything runs (docs/scripts.md).
  const text = $('wf-json').value;
  let source;
  if (text.trimStart().startsWith('{')) {
    try {
      source = { workflow: JSON.parse(text) };
    } catch (e) {
      out.textContent = `This is not JSON: ${e.message}`;
      out.dataset.status = 'bad_request';
      return;
    }
  } else {
    source = { script: text, scriptName: 'script.ts' };
  }
  out.textContent = 'Waiting for your answer to its plan…\n';
  $('wf-run').disabled = true;
  const sessionId = (await currentSession()) || (await startSession());
  const r = await host('run-workflow', { ...source, sessionId }, (ev) => {
    if (ev.event === 'task-result') out.textContent += `${ev.data.task} (layer ${ev.data.layer}): ${ev.data.status}\n`;
  });
  $('wf-run').disabled = false;
  if (r.success) {
    out.textContent += `The workflow ended: ${r.data.status} (${r.data.prompts} ${r.data.prompts === 1 ? 'prompt' : 'prompts'}).`;
    out.dataset.status = r.data.status;
  } else {
    out.textContent += `Not run: ${r.error} [${r.code}]`;
    out.dataset.status = r.code;
  }
  loadDenials();
});

async function showSession() {
  $('py-session').textContent = (await currentSession()) || 'a new one at the next run (medium)';
}
showSession();
refresh();
checkAudit();
