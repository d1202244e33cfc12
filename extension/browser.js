import { native } from './native.js';
import { chromePermissionFor, hasChromePermission } from './chromeperms.js';
import { ensureOffscreen } from './offdoc.js';

// Performs the host's browser-call requests: page calls through the page
// mediator (content.js) in the one document the run is bound to, clipboard
// through the offscreen document, notifications through
// chrome.notifications. It also binds runs to that document (bindTab).

const fail = (code, error) => ({ success: false, code, error });

// Stop wins. A Python run's context carries a token of its own (run),
// given here when the run starts (runToken). Stop marks the run stopped
// in this service worker the moment the person presses it (stopRun), and
// a browser-call of a stopped run is refused, not performed, however the
// host decided it: an "Allow once" given in the same moment as Stop
// reaches the host first (Stop travels through the offscreen document),
// and would otherwise write the page after Stop. The check sits right
// before each effect, with no await between it and the effect, so the
// decision "perform or cancel" is taken once, here; the host records
// what this answers (performed, or prompt_cancelled).
const runTokens = new Map(); // the page's run ref -> the run's token
const stoppedRuns = new Set(); // tokens of runs stopped
const MAX_RUNS_KEPT = 512;

function keep(map, key, value) {
  map.set(key, value);
  if (map.size > MAX_RUNS_KEPT) map.delete(map.keys().next().value);
}

// runToken gives the run the page knows as ref its token, the one its
// context carries.
export function runToken(ref) {
  const token = crypto.randomUUID();
  if (ref) keep(runTokens, String(ref), token);
  return token;
}

// stopRun marks the run ref stopped: from now on none of its calls is
// performed.
export function stopRun(ref) {
  const token = runTokens.get(String(ref));
  if (!token) return;
  stoppedRuns.add(token);
  if (stoppedRuns.size > MAX_RUNS_KEPT) stoppedRuns.delete(stoppedRuns.values().next().value);
}

// stopped is the refusal of a call of a stopped run, or null.
function stopped(m) {
  const token = m.context?.run;
  if (typeof token !== 'string' || !stoppedRuns.has(token)) return null;
  return fail('prompt_cancelled', `the run was stopped before ${String(m.call)} was performed: nothing was done`);
}

// bindTab binds a run to the document the tab holds now. It injects the
// page mediator into the tab's top frame (allowed by activeTab: the user
// clicked the action on this tab) and keeps what the injection reports:
// the id of the document it ran in and that document's own origin. The run
// carries both (context.documentId, and the origin the host puts in
// context.origin), so every page call reaches that document or none, and
// the prompt shows the origin that will be touched. A tab that cannot be
// injected (no grant, a browser page, an opaque origin) gives an unbound
// run: it still runs, and its page calls are refused.
export async function bindTab(tabId) {
  if (!Number.isInteger(tabId)) return { context: {}, origin: '' };
  let injected;
  try {
    [injected] = await chrome.scripting.executeScript({ target: { tabId }, files: ['content.js'] });
  } catch (e) {
    return { context: { tabId, unbound: `the page cannot be reached: ${e.message || e}` }, origin: '' };
  }
  const origin = injected?.result;
  // Only scheme://host[:port] keys prompts and remembered answers well:
  // "null" is every opaque origin (sandboxed, data:) at once and "file://"
  // every local file; the host refuses both.
  if (typeof injected?.documentId !== 'string' || typeof origin !== 'string' || !/^[a-z][a-z0-9+.-]*:\/\/[^/?#@]+$/.test(origin)) {
    return { context: { tabId, unbound: 'the page has no origin a run can be bound to' }, origin: '' };
  }
  // binding names this run's injection: what the page answers is counted
  // per run (pageRecord).
  return { context: { tabId, documentId: injected.documentId, binding: crypto.randomUUID() }, origin };
}

// What the page's world answers does not speak for anyone: a compromised
// renderer holds it, and may answer every call with a refusal. So a
// refusal the document answered is recorded only here, in the name of the
// run whose call it answered (the agent the host's browser-call names),
// and at most PAGE_RECORDS_PER_RUN times per run (per binding): a page
// cannot fill the denial log, nor write in another agent's name. The
// content-script world has no message of its own that records anything
// (router.js).
export const PAGE_RECORDS_PER_RUN = 8;
const pageRecords = new Map(); // binding -> records written for it
const MAX_RUNS_COUNTED = 512;

function pageRecordAllowed(binding) {
  const key = String(binding ?? '');
  const n = pageRecords.get(key) || 0;
  if (n >= PAGE_RECORDS_PER_RUN) return false;
  pageRecords.delete(key);
  pageRecords.set(key, n + 1);
  if (pageRecords.size > MAX_RUNS_COUNTED) pageRecords.delete(pageRecords.keys().next().value);
  return true;
}

// logPageRefusal records a page call's refusal: page_changed when the
// bound document is gone (nothing is left in the page to report it, so
// the service worker saw it itself), and, bounded per run, what the
// document answered (page_changed for an origin that is not the bound
// one, permission_not_granted from its domAccess check).
async function logPageRefusal(m, origin, documentId, binding, code, reason, fromPage) {
  const call = String(m.call);
  if (fromPage && !pageRecordAllowed(binding)) {
    console.warn(`agentgate: ${code} from the page not recorded: this run has had ${PAGE_RECORDS_PER_RUN}`);
    return;
  }
  const details = { operation: call, documentId };
  if (fromPage) details.decidedBy = 'page';
  try {
    await native.request('log-denial', {
      agentId: m.agentId, permission: call.startsWith('page.write.') ? 'page.write' : 'page.read', code,
      context: { reason: String(reason).slice(0, 500), method: call.split('.').pop(), url: origin, details },
    });
  } catch (e) {
    console.warn(`agentgate: ${code} not logged:`, e.message || e);
  }
}

async function pageCall(m) {
  const { tabId, documentId, origin, unbound, binding } = m.context || {};
  if (!Number.isInteger(tabId)) return fail('bad_request', 'this run has no tab to act on');
  if (typeof documentId !== 'string' || !documentId || typeof origin !== 'string' || !origin) {
    return fail('no_browser', `this run is bound to no page${unbound ? `: ${String(unbound).slice(0, 300)}` : ''}`);
  }
  // Layer 1 enforces the profile itself, so it reads it from the host (the
  // extension keeps no copy that could go stale).
  const info = await native.request('getAgentInfo', { agentId: m.agentId });
  const domAccess = info.success ? info.data?.profile?.capabilities?.domAccess || 'none' : 'none';
  let res;
  let fromPage = true;
  const refused = stopped(m);
  if (refused) return refused;
  try {
    // The document, not the tab: a tab that navigated holds another
    // document, and this message must never reach it. frameId 0 with the
    // documentId delivers only while that document is the one the tab
    // shows, and fails at once otherwise; documentId alone queues the
    // message for a document kept in the back/forward cache, where it
    // would wait unanswered and could be acted on when the user goes back.
    res = await chrome.tabs.sendMessage(tabId,
      { type: 'agentgate-call', call: m.call, params: m.params || {}, agentId: m.agentId, domAccess, origin },
      { frameId: 0, documentId });
  } catch (e) {
    res = fail('page_changed', `the page this run is bound to (${origin}) is no longer the one in its tab: ${e.message || e}`);
    fromPage = false;
  }
  if (!res || typeof res !== 'object') return fail('no_browser', 'the page did not answer');
  if (res.code === 'page_changed' || res.code === 'permission_not_granted') {
    await logPageRefusal(m, origin, documentId, binding, res.code, res.error || res.code, fromPage);
  }
  return res;
}

export async function browserCall(m) {
  const call = String(m.call || '');
  if (stopped(m)) return stopped(m);
  if (call.startsWith('page.')) return pageCall(m);
  // Clipboard and notifications are optional Chrome permissions
  // (chromeperms.js): without the one a call needs, it is refused here,
  // named, and the host records the refusal.
  if (!(await hasChromePermission(call))) {
    return fail('permission_not_granted', `Chrome has not given this extension ${chromePermissionFor(call)}; grant ${call} to ${m.agentId} again in the options page, which asks Chrome for it`);
  }
  if (call === 'clipboard.read' || call === 'clipboard.write') {
    await ensureOffscreen();
    const refused = stopped(m);
    if (refused) return refused;
    return chrome.runtime.sendMessage({ target: 'offscreen', call, text: m.params?.text ?? '' });
  }
  if (call === 'notifications.showNotification') {
    const refused = stopped(m);
    if (refused) return refused;
    const id = await chrome.notifications.create({
      type: 'basic', iconUrl: 'icon.png',
      title: String(m.params?.title || 'Agent').slice(0, 200),
      message: `${String(m.params?.message || '').slice(0, 1000)}\n(from agent ${m.agentId})`,
    });
    return { success: true, data: { notificationId: id } };
  }
  return fail('unknown_permission', `unknown browser call ${call}`);
}
