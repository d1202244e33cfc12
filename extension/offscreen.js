// Clipboard access for agents: MV3 service workers have no clipboard, an
// offscreen document does.
import { fromWorker } from './swsender.js';

const area = document.getElementById('clip');

// Only the service worker may ask, after the host decided the call
// (swsender.js says how it is told from any other context).
chrome.runtime.onMessage.addListener((msg, sender, sendResponse) => {
  if (msg?.target !== 'offscreen') return false;
  if (!fromWorker(sender)) {
    sendResponse({ success: false, code: 'permission_not_granted', error: 'the clipboard answers the service worker only' });
    return false;
  }
  try {
    if (msg.call === 'clipboard.write') {
      area.value = String(msg.text ?? '');
      area.select();
      const ok = document.execCommand('copy');
      sendResponse(ok ? { success: true, data: {} } : { success: false, code: 'internal_error', error: 'copy was refused' });
    } else if (msg.call === 'clipboard.read') {
      area.value = '';
      area.focus();
      const ok = document.execCommand('paste');
      sendResponse(ok ? { success: true, data: { text: area.value } } : { success: false, code: 'internal_error', error: 'paste was refused' });
    } else {
      sendResponse({ success: false, code: 'bad_request', error: 'unknown clipboard call' });
    }
  } catch (e) {
    sendResponse({ success: false, code: 'internal_error', error: String(e) });
  }
  return false;
});
