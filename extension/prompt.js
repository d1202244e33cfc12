// Shows one prompt and sends the answer to the service worker. Closing the
// window without answering denies.
const promptId = new URLSearchParams(location.search).get('id');
let details = {};
try {
  details = JSON.parse(decodeURIComponent(location.hash.slice(1)));
} catch {
  details = {};
}
const target = details.target || {};
const parts = [];
if (target.method || target.url) parts.push(`${target.method || ''} ${target.url || ''}`.trim());
if (target.selector) parts.push(`selector ${target.selector}`);
if (target.origin) parts.push(`page ${target.origin}`);
if (target.textLength) parts.push(`${target.textLength} bytes of text`);
document.getElementById('agent').textContent = details.agentId || '?';
document.getElementById('operation').textContent = details.operation || '?';
document.getElementById('reason').textContent = details.reason ? `It ${details.reason.replace(/^it /, '')}.` : '';
document.getElementById('class').textContent = details.class || '';
document.getElementById('permission').textContent = details.permission || '';
document.getElementById('target').textContent = parts.join('; ') || '(none)';
// The set is the ceiling on what this agent can ever be granted.
document.getElementById('permission-set').textContent = details.permissionSet || '(none named)';
// The reach of an "always" answer: the method and canonical origin for a
// fetch, the page's origin for a write, or the operation as a whole.
document.getElementById('remember-as').textContent = details.rememberAs || `every ${details.operation || '?'} by this agent`;
for (const answer of ['allow-once', 'always-allow', 'deny', 'always-block']) {
  document.getElementById(answer).addEventListener('click', async () => {
    await chrome.runtime.sendMessage({ type: 'prompt-answer', promptId, answer });
    window.close();
  });
}
