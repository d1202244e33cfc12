// Runs an agent on the active tab (or the tab in ?tab=ID, when the popup is
// opened as a page) in the current session, and shows its output and
// denials as they stream in. The person picks the session here or starts
// a new one (medium); a run with no current session starts one, which then
// becomes current.
import { host, el, showHostProblem } from './host.js';
import { startPython, startModule, stopPython, latestPython, followPython, warmPython, pyodideMissing } from './pyclient.js';
import { chips } from './consent.js';
import { currentSession, setCurrentSession, listSessions, startSession } from './sessions.js';
import { showAudit, followAudit } from './auditview.js';

const $ = (id) => document.getElementById(id);

async function targetTab() {
  const fromQuery = Number(new URLSearchParams(location.search).get('tab'));
  if (Number.isInteger(fromQuery) && fromQuery > 0) return chrome.tabs.get(fromQuery);
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab;
}

// showSessions fills the picker with the host's sessions and shows the
// current one. A kept id the host no longer has is dropped: the next run
// starts a session rather than fail with unknown_session.
async function showSessions() {
  let list = [];
  try {
    list = await listSessions();
    $('session-error').textContent = '';
  } catch (e) {
    $('session-error').textContent = `sessions: ${e.code}: ${e.message}`;
  }
  let current = await currentSession();
  if (current && !list.some((s) => s.sessionId === current)) {
    current = '';
    await setCurrentSession('');
  }
  const options = list.map((s) => el('option', `${s.sessionId} (${s.settings.permissionLevel})`, { value: s.sessionId }));
  options.unshift(el('option', 'a new session (medium)', { value: '' }));
  $('session').replaceChildren(...options);
  $('session').value = current;
  const cur = list.find((s) => s.sessionId === current);
  $('session-current').textContent = cur ? `${cur.sessionId} (${cur.settings.permissionLevel})` : 'a new one at the next run (medium)';
  $('session-current').dataset.session = current;
}

$('session').addEventListener('change', async () => {
  await setCurrentSession($('session').value);
  await showSessions();
});
$('session-new').addEventListener('click', async () => {
  try {
    await startSession($('session-name').value.trim());
    $('session-name').value = '';
  } catch (e) {
    $('session-error').textContent = `new session: ${e.code}: ${e.message}`;
  }
  await showSessions();
});

// ranIn makes the session a run reported current: the fresh one a run
// without a session started.
async function ranIn(sessionId) {
  if (sessionId && sessionId !== (await currentSession())) {
    await setCurrentSession(sessionId);
    await showSessions();
  }
}

// The installed agents by id, for the line under the picker.
let agentsById = new Map();

// showAgent says what the picked agent is: its description and the
// permissions it holds, as chips.
function showAgent() {
  const a = agentsById.get($('agent').value);
  $('agent-description').textContent = a ? (a.profile.description || 'No description.') : '';
  $('agent-chips').replaceChildren(...(a ? [chips(a.profile)] : []));
}

async function init() {
  // No host, or one of another version: the banner says how to fix it,
  // and nothing can run until then.
  const ok = await showHostProblem('host-problem');
  $('run').disabled = !ok;
  if (!ok) {
    $('session-current').textContent = 'none (nmhost is not reachable)';
    $('run-state').textContent = 'Run is off until nmhost answers.';
  } else {
    await showSessions();
  }
  const r = ok ? await host('list-agents') : { success: false };
  const agents = r.success ? r.data.agents.filter((a) => a.moduleSha256) : [];
  agentsById = new Map(agents.map((a) => [a.profile.agentId, a]));
  // By name, with the id where two share one.
  $('agent').replaceChildren(...agents.map((a) => el('option', a.profile.name ? `${a.profile.name} (${a.profile.agentId})` : a.profile.agentId,
    { value: a.profile.agentId, 'data-runtime': a.profile.runtime || 'wasm' })));
  $('no-agents').hidden = !ok || agents.length > 0;
  $('run-form').hidden = ok && agents.length === 0;
  showAgent();
  // A Python agent among them: the popup says so plainly when the
  // extension was loaded without Pyodide.
  if (agents.some((a) => a.profile.runtime === 'python') && (await pyodideMissing())) $('pyodide-missing').hidden = false;
  showLastRun();
  const tab = await targetTab();
  // The title and URL are visible only for the tab the action was clicked
  // on (activeTab; the extension does not ask for "tabs").
  $('tab').textContent = tab ? `tab: ${tab.title || tab.url || 'the current tab'}` : 'no tab';
}

// Picking a Python agent has a Pyodide loaded ahead of the run, in the
// offscreen document, while the person types the input: the first run
// starts warm when they take a few seconds. Only on that pick: a load
// takes both cores for seconds, which a module's run should not pay for.
$('agent').addEventListener('change', () => {
  showAgent();
  if ($('agent').selectedOptions[0]?.dataset.runtime === 'python' && $('pyodide-missing').hidden) warmPython();
});

$('run').addEventListener('click', async () => {
  const tab = await targetTab();
  const out = $('output');
  const denials = $('run-denials');
  out.textContent = '';
  denials.replaceChildren();
  delete out.dataset.status;
  // A run that names no session gets one that ends with it (the host's
  // ephemeral session); the popup's runs continue a session, so one is
  // started first when none is current.
  const sessionId = (await currentSession()) || (await startSession());
  // A denial line: what was refused, then why; the code once.
  const showDenial = (d) => denials.append(el('li', `${d.permission}: ${d.context?.reason || d.code}`, { 'data-code': d.code, title: d.code }));
  const python = $('agent').selectedOptions[0]?.dataset.runtime === 'python';
  // Neither kind of run is this popup's: a Python run lives in the
  // offscreen document, a module's in the service worker. This popup may
  // close (a prompt takes the focus) and the run goes on; the host
  // decides every call, and the popup opened again shows the run.
  const start = python ? startPython : startModule;
  $('run').disabled = true;
  $('run-state').textContent = python ? 'Loading Python…' : 'Running…';
  let first = true;
  const { ref, done } = await start({ agentId: $('agent').value, input: $('input').value, tabId: tab?.id, sessionId,
    onOutput: (text) => {
      if (first) $('run-state').textContent = 'Running…';
      first = false;
      out.textContent += text;
    },
    onDenial: showDenial });
  $('stop').hidden = false;
  $('stop').onclick = () => stopPython(ref);
  const r = await done;
  $('stop').hidden = true;
  $('run').disabled = false;
  $('run-state').textContent = r.status === 'ok' ? 'Done.' : `Ended: ${r.status}`;
  out.textContent = r.output || '';
  if (r.code) out.textContent += `\n[${r.code}] ${r.error || ''}`;
  if (r.timings) out.dataset.timings = JSON.stringify(r.timings);
  await ranIn(r.sessionId);
  out.dataset.session = r.sessionId || '';
  out.dataset.status = r.status; // last: a run's end is seen with its session
});

// showLastRun shows the newest run the service worker kept, of either
// kind: one this popup started before Chrome closed it (a prompt took
// the focus) goes on, and its output and end show here when the popup
// opens again.
async function showLastRun() {
  let run;
  try {
    run = await latestPython();
  } catch {
    return;
  }
  if (!run) return;
  const box = $('last-run');
  const out = $('last-output');
  box.hidden = false;
  $('last-agent').textContent = agentsById.get(run.agentId)?.profile.name || run.agentId;
  out.textContent = run.output;
  const r = await followPython(run, { onOutput: (text) => { out.textContent += text; } });
  out.textContent = (r.output || '') + (r.code ? `\n[${r.code}] ${r.error || ''}` : '');
  out.dataset.status = r.status;
}

// The audit trail's line: checked as the popup opens, and again by the
// service worker after each run (audit.js); a break shows here too.
async function initAudit() {
  const line = $('audit-status');
  followAudit(line);
  let o;
  try {
    o = await chrome.runtime.sendMessage({ type: 'audit-check' });
  } catch (e) {
    o = { state: 'unknown', code: 'internal_error', error: String(e.message || e) };
  }
  showAudit(line, o);
}
init();
initAudit();
