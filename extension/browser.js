import { native } from './native.js';
import { chromePermissionFor, hasChromePermission } from './chromeperms.js';
import { ensureOffscreen } from './offdoc.js';

// Performs the host's browser-call requests: page calls through the page
// mediator (content.js) in the one document the run is bound to, clipboard
// through the offscreen document, notifications through
// chrome.notifications. It also binds runs to that document (bindTab).

const fail = (code, error) => ({ success: false, code, error });

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
  return { context: { tabId, documentId: injected.documentId }, origin };
}

// The denial log gets page_changed from here, for both ways it happens: the
// bound document is gone (nothing is left in the page to report it) or the
// document answered that its origin is not the bound one.
async function logPageChanged(m, origin, documentId, reason) {
  const call = String(m.call);
  try {
    await native.request('log-denial', {
      agentId: m.agentId, permission: call.startsWith('page.write.') ? 'page.write' : 'page.read', code: 'page_changed',
      context: { reason, method: call.split('.').pop(), url: origin, details: { operation: call, documentId } },
    });
  } catch (e) {
    console.warn('agentgate: page_changed not logged:', e.message || e);
  }
}

async function pageCall(m) {
  const { tabId, documentId, origin, unbound } = m.context || {};
  if (!Number.isInteger(tabId)) return fail('bad_request', 'this run has no tab to act on');
  if (typeof documentId !== 'string' || !documentId || typeof origin !== 'string' || !origin) {
    return fail('no_browser', `this run is bound to no page${unbound ? `: ${String(unbound).slice(0, 300)}` : ''}`);
  }
  // Layer 1 enforces the profile itself, so it reads it from the host (the
  // extension keeps no copy that could go stale).
  const info = await native.request('getAgentInfo', { agentId: m.agentId });
  const domAccess = info.success ? info.data?.profile?.capabilities?.domAccess || 'none' : 'none';
  let res;
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
  }
  if (!res) return fail('no_browser', 'the page did not answer');
  if (res.code === 'page_changed') await logPageChanged(m, origin, documentId, String(res.error || 'the page changed'));
  return res;
}

export async function browserCall(m) {
  const call = String(m.call || '');
  if (call.startsWith('page.')) return pageCall(m);
  // Clipboard and notifications are optional Chrome permissions
  // (chromeperms.js): without the one a call needs, it is refused here,
  // named, and the host records the refusal.
  if (!(await hasChromePermission(call))) {
    return fail('permission_not_granted', `Chrome has not given this extension ${chromePermissionFor(call)}; grant ${call} to ${m.agentId} again in the options page, which asks Chrome for it`);
  }
  if (call === 'clipboard.read' || call === 'clipboard.write') {
    await ensureOffscreen();
    return chrome.runtime.sendMessage({ target: 'offscreen', call, text: m.params?.text ?? '' });
  }
  if (call === 'notifications.showNotification') {
    const id = await chrome.notifications.create({
      type: 'basic', iconUrl: 'icon.png',
      title: String(m.params?.title || 'Agent').slice(0, 200),
      message: `${String(m.params?.message || '').slice(0, 1000)}\n(from agent ${m.agentId})`,
    });
    return { success: true, data: { notificationId: id } };
  }
  return fail('unknown_permission', `unknown browser call ${call}`);
}
