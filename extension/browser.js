import { native } from './native.js';

// Performs the host's browser-call requests: page calls through the
// content script of the run's tab, clipboard through the offscreen
// document, notifications through chrome.notifications.

const fail = (code, error) => ({ success: false, code, error });

async function ensureOffscreen() {
  if (await chrome.offscreen.hasDocument?.()) return;
  try {
    await chrome.offscreen.createDocument({
      url: 'offscreen.html',
      reasons: ['CLIPBOARD'],
      justification: 'Agents granted clipboard access read and write the clipboard here; service workers have none.',
    });
  } catch (e) {
    if (!String(e.message).includes('single offscreen')) throw e;
  }
}

async function pageCall(m) {
  const tabId = m.context?.tabId;
  if (!Number.isInteger(tabId)) return fail('bad_request', 'this run has no tab to act on');
  // Layer 1 enforces the profile itself, so it reads it from the host (the
  // extension keeps no copy that could go stale).
  const info = await native.request('getAgentInfo', { agentId: m.agentId });
  const domAccess = info.success ? info.data?.profile?.capabilities?.domAccess || 'none' : 'none';
  try {
    const res = await chrome.tabs.sendMessage(tabId, { type: 'agentgate-call', call: m.call, params: m.params || {}, agentId: m.agentId, domAccess });
    return res || fail('no_browser', 'the page did not answer');
  } catch (e) {
    return fail('no_browser', `the tab cannot be reached: ${e.message || e}`);
  }
}

export async function browserCall(m) {
  const call = String(m.call || '');
  if (call.startsWith('page.')) return pageCall(m);
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
