// Asks the user about an operation the host says needs confirmation: a
// small window shows the agent, the operation, its class and the exact
// target; closed or unanswered within the host's timeout means deny.
const waiting = new Map(); // promptId -> resolve

const ANSWERS = new Set(['allow-once', 'always-allow', 'deny', 'always-block']);

export async function prompt(m) {
  return ask({
    agentId: m.agentId, operation: m.operation, permission: m.permission,
    class: m.class, target: m.target || {}, rememberAs: m.rememberAs || '', reason: m.reason,
    permissionSet: m.permissionSet || '',
  }, m.timeoutMs, ANSWERS);
}

// A workflow layer's prompt: one window listing every task of the layer
// that needs a person (agent, operation, exact target). It offers allow
// once or deny for the whole layer; no "always".
export async function promptLayer(m) {
  const tasks = (Array.isArray(m.tasks) ? m.tasks : []).map((t) => ({
    task: String(t.task || ''), agentId: String(t.agentId || ''), operation: String(t.operation || ''),
    class: String(t.class || ''), target: t.target || {}, permissionSet: String(t.permissionSet || ''), reason: String(t.reason || ''),
  }));
  return ask({ layer: Number(m.layer) || 0, workflow: String(m.workflow || ''), tasks }, m.timeoutMs, LAYER_ANSWERS);
}

const LAYER_ANSWERS = new Set(['allow-once', 'deny']);

async function ask(details, timeoutMs, allowed) {
  const promptId = crypto.randomUUID();
  const answered = new Promise((resolve) => waiting.set(promptId, resolve));
  const url = chrome.runtime.getURL(`prompt.html?id=${promptId}#${encodeURIComponent(JSON.stringify(details))}`);
  const win = await chrome.windows.create({ url, type: 'popup', width: 480, height: details.tasks ? 560 : 440, focused: true });
  // Closing the window is a deny now, not after the timeout.
  const closed = (windowId) => windowId === win.id && waiting.get(promptId)?.('deny');
  chrome.windows.onRemoved.addListener(closed);
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve('deny'), Math.max(1000, Number(timeoutMs) || 60000)); });
  const answer = await Promise.race([answered, timeout]);
  clearTimeout(timer);
  waiting.delete(promptId);
  chrome.windows.onRemoved.removeListener(closed);
  chrome.windows.remove(win.id).catch(() => {});
  return { answer: allowed.has(answer) ? answer : 'deny' };
}

export function promptAnswered(promptId, answer) {
  const resolve = waiting.get(promptId);
  if (!resolve) return false;
  resolve(answer);
  return true;
}
