// Runs an agent on the active tab (or the tab in ?tab=ID, when the popup is
// opened as a page) in the current session, and shows its output and
// denials as they stream in. The person picks the session here or starts
// a new one (medium); a run with no current session starts one, which then
// becomes current.
import { host, el, showHostProblem } from './host.js';
import { startPython, stopPython, latestPython, followPython, warmPython, pyodideMissing } from './pyclient.js';
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

async function init() {
  await showHostProblem('host-problem');
  await showSessions();
  const r = await host('list-agents');
  const agents = r.success ? r.data.agents : [];
  $('agent').replaceChildren(...agents.filter((a) => a.moduleSha256).map((a) => el('option', a.profile.agentId,
    { value: a.profile.agentId, 'data-runtime': a.profile.runtime || 'wasm' })));
  // A Python agent among them: the popup says so plainly when the
  // extension was loaded without Pyodide.
  if (agents.some((a) => a.profile.runtime === 'python') && (await pyodideMissing())) $('pyodide-missing').hidden = false;
  showLastPythonRun();
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
  const showDenial = (d) => denials.append(el('li', `${d.permission}: ${d.code}: ${d.context?.reason || ''}`, { 'data-code': d.code }));
  if ($('agent').selectedOptions[0]?.dataset.runtime === 'python') {
    // Python runs in the offscreen document, not here: this popup may
    // close (a prompt takes the focus) and the run goes on; the host
    // decides every call.
    const { ref, done } = await startPython({ agentId: $('agent').value, input: $('input').value, tabId: tab?.id, sessionId,
      onOutput: (text) => { out.textContent += text; }, onDenial: showDenial });
    $('stop').hidden = false;
    $('stop').onclick = () => stopPython(ref);
    const r = await done;
    $('stop').hidden = true;
    out.textContent = r.output;
    if (r.code) out.textContent += `\n[${r.code}] ${r.error || ''}`;
    out.dataset.timings = JSON.stringify(r.timings);
    await ranIn(r.sessionId);
    out.dataset.session = r.sessionId || '';
    out.dataset.status = r.status; // last: a run's end is seen with its session
    return;
  }
  // The service worker binds the run to the document this tab holds now
  // and takes the origin from that document, not from tab.url.
  const r = await host('run-agent', { agentId: $('agent').value, input: $('input').value, tabId: tab?.id, sessionId }, (ev) => {
    if (ev.event === 'output') out.textContent += ev.data.text;
    if (ev.event === 'denial') denials.append(el('li', `${ev.data.permission}: ${ev.data.code}: ${ev.data.context?.reason || ''}`, { 'data-code': ev.data.code }));
  });
  if (r.success) {
    // The reply holds the whole output; streamed pieces may still be in flight.
    out.textContent = r.data.output;
    if (r.data.code) out.textContent += `\n[${r.data.code}] ${r.data.error}`;
    await ranIn(r.data.sessionId);
    out.dataset.session = r.data.sessionId;
    out.dataset.status = r.data.status; // last: a run's end is seen with its session
  } else {
    out.dataset.status = r.code;
    out.textContent += `\n[${r.code}] ${r.error}`;
  }
});
// showLastPythonRun shows the newest Python run the service worker kept:
// one this popup started before Chrome closed it (a prompt took the
// focus) goes on, and its output and end show here when the popup opens
// again.
async function showLastPythonRun() {
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
  $('last-agent').textContent = run.agentId;
  out.textContent = run.output;
  const r = await followPython(run, { onOutput: (text) => { out.textContent += text; } });
  out.textContent = r.output + (r.code ? `\n[${r.code}] ${r.error || ''}` : '');
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
