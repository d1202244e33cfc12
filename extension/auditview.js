// The audit trail's line, as the options page and the popup show it: the
// outcome of the service worker's last check (audit.js), kept in storage
// and shown again whenever a new check stores another.
import { describe } from './checkpoint.js';

// showAudit writes outcome o into the line el.
export function showAudit(el, o) {
  el.textContent = describe(o);
  el.title = o?.error || '';
  el.className = `audit ${o?.state || 'unknown'}`;
  el.dataset.state = o?.state || 'unknown';
  el.dataset.code = o?.code || '';
}

// followAudit shows each outcome the service worker stores from now on
// (its checks after runs and every minute), and calls then(o) after each.
export function followAudit(el, then = () => {}) {
  chrome.storage.local.onChanged.addListener((changes) => {
    if (changes.auditStatus?.newValue) {
      showAudit(el, changes.auditStatus.newValue);
      then(changes.auditStatus.newValue);
    }
  });
}
