// Shows one prompt, for one operation or for a workflow layer's tasks, and
// sends the answer to the service worker. Closing the window without
// answering denies.
const promptId = new URLSearchParams(location.search).get('id');
let details = {};
try {
  details = JSON.parse(decodeURIComponent(location.hash.slice(1)));
} catch {
  details = {};
}
const $ = (id) => document.getElementById(id);

// describe is the exact target, never contents: page text and clipboard
// data appear only as a length.
function describe(target) {
  const t = target || {};
  const parts = [];
  if (t.method || t.url) parts.push(`${t.method || ''} ${t.url || ''}`.trim());
  if (t.selector) parts.push(`selector ${t.selector}`);
  if (t.origin) parts.push(`page ${t.origin}`);
  if (t.path) parts.push(`workspace file ${t.path}`);
  if (Array.isArray(t.paths) && t.paths.length) parts.push(`files ${t.paths.join(', ')}`);
  if (t.textLength) parts.push(`${t.textLength} ${t.textLength === 1 ? 'byte' : 'bytes'} of text`);
  return parts.join('; ') || '(none)';
}

// rememberAs says what an "always" answer would cover. The outside files
// of a shell read come as a JSON list, shown as the files themselves.
function rememberAs(d) {
  const r = d.rememberAs || '';
  if (r.startsWith('[')) {
    try {
      return `reading exactly ${JSON.parse(r).join(', ')}`;
    } catch {
      return r;
    }
  }
  return r || `every ${d.operation || '?'} by this agent`;
}

let answers = ['allow-once', 'always-allow', 'deny', 'always-block'];
if (Array.isArray(details.tasks)) {
  // A layer: one answer for all its listed tasks, and no "always": a
  // workflow's approval holds for this run of this layer only.
  $('single').hidden = true;
  $('layer').hidden = false;
  $('workflow').textContent = details.workflow || '?';
  $('layer-no').textContent = String(details.layer || '?');
  $('tasks').tBodies[0].replaceChildren(...details.tasks.map((t) => {
    const tr = document.createElement('tr');
    for (const v of [t.task, t.agentId, t.operation, t.class, describe(t.target), t.permissionSet || '(none named)']) {
      tr.insertCell().textContent = v || '';
    }
    return tr;
  }));
  answers = ['allow-once', 'deny'];
  $('always-allow').hidden = true;
  $('always-block').hidden = true;
} else {
  $('agent').textContent = details.agentId || '?';
  $('operation').textContent = details.operation || '?';
  $('reason').textContent = details.reason ? `It ${details.reason.replace(/^it /, '')}.` : '';
  $('class').textContent = details.class || '';
  $('permission').textContent = details.permission || '';
  $('target').textContent = describe(details.target);
  // The set is the ceiling on what this agent can ever be granted.
  $('permission-set').textContent = details.permissionSet || '(none named)';
  // The reach of an "always" answer: the method and canonical origin for a
  // fetch, the page's origin for a write, the outside files a shell
  // command reads, or the operation as a whole.
  $('remember-as').textContent = rememberAs(details);
}
for (const answer of answers) {
  $(answer).addEventListener('click', async () => {
    await chrome.runtime.sendMessage({ type: 'prompt-answer', promptId, answer });
    window.close();
  });
}
