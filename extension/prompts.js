// Asks the user about an operation the host says needs confirmation: a
// small window shows the agent, the operation, its class and the exact
// target; closed or unanswered within the host's timeout means deny.
const waiting = new Map(); // promptId -> resolve

const ANSWERS = new Set(['allow-once', 'always-allow', 'deny', 'always-block']);

export async function prompt(m) {
  const promptId = crypto.randomUUID();
  const answered = new Promise((resolve) => waiting.set(promptId, resolve));
  const details = {
    agentId: m.agentId, operation: m.operation, permission: m.permission,
    class: m.class, target: m.target || {}, rememberAs: m.rememberAs || '', reason: m.reason,
    permissionSet: m.permissionSet || '',
  };
  const url = chrome.runtime.getURL(`prompt.html?id=${promptId}#${encodeURIComponent(JSON.stringify(details))}`);
  const win = await chrome.windows.create({ url, type: 'popup', width: 480, height: 440, focused: true });
  // Closing the window is a deny now, not after the timeout.
  const closed = (windowId) => windowId === win.id && waiting.get(promptId)?.('deny');
  chrome.windows.onRemoved.addListener(closed);
  let timer;
  const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve('deny'), Math.max(1000, Number(m.timeoutMs) || 60000)); });
  const answer = await Promise.race([answered, timeout]);
  clearTimeout(timer);
  waiting.delete(promptId);
  chrome.windows.onRemoved.removeListener(closed);
  chrome.windows.remove(win.id).catch(() => {});
  return { answer: ANSWERS.has(answer) ? answer : 'deny' };
}

export function promptAnswered(promptId, answer) {
  const resolve = waiting.get(promptId);
  if (!resolve) return false;
  resolve(answer);
  return true;
}
