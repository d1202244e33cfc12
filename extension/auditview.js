// The audit trail's line, as the options page and the popup show it: the
// outcome of the service worker's last check (audit.js), kept in storage
// and shown again whenever a new check stores another.
const breaks = {
  audit_truncated: (at) => `the log is shorter than the checkpoint seen at ${at}: records were removed`,
  audit_inconsistent: (at) => `the log does not extend the checkpoint seen at ${at}: records were rewritten`,
  audit_bad_signature: (at) => `the checkpoint seen at ${at} is not signed by the host's key`,
  checkpoint_missing: (at) => `the checkpoint kept since ${at} is gone from the extension's storage`,
  checkpoint_malformed: (at) => `the kept checkpoint (chain started ${at}) is malformed`,
};

function when(ms) {
  return ms ? new Date(ms).toLocaleString() : 'an unknown time';
}

// describeAudit is the line a person reads for an outcome of audit.js.
export function describeAudit(o) {
  if (o?.state === 'consistent') return `audit trail consistent since ${when(o.since)} (${o.size} records)`;
  if (o?.state === 'broken' && breaks[o.code]) return `audit trail broken: ${breaks[o.code](when(o.seenAt))} (${o.code})`;
  return `audit trail not checked: ${o?.code || 'internal_error'}: ${o?.error || 'no answer'}`;
}

// showAudit writes outcome o into the line el.
export function showAudit(el, o) {
  el.textContent = describeAudit(o);
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
