// Extension pages talk to the host through the service worker, which owns
// the native port.
// A request with onEvent (a run) also holds a port open while it runs: if
// this page goes away first, the service worker has the host end it
// (router.js, portHandlers), so no run, and no prompt of it, outlives the
// page that shows it.
export async function host(type, params = {}, onEvent) {
  const ref = onEvent ? crypto.randomUUID() : undefined;
  let listener;
  let port;
  if (onEvent) {
    listener = (msg) => {
      if (msg?.type === 'host-event' && msg.ref === ref) onEvent(msg.event);
    };
    chrome.runtime.onMessage.addListener(listener);
    port = chrome.runtime.connect({ name: `request:${ref}` });
  }
  try {
    return await chrome.runtime.sendMessage({ type: 'host', request: { type, ...params }, ref });
  } finally {
    if (listener) chrome.runtime.onMessage.removeListener(listener);
    port?.disconnect();
  }
}

// el builds an element with text only: host data never becomes markup.
export function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

// showHostProblem asks the host hello and, when its protocol version is
// not this extension's (or no host answers), says so in element id, in
// the words native.js chose: which side is older and what to update.
export async function showHostProblem(id) {
  const r = await host('hello');
  const line = document.getElementById(id);
  if (!line) return;
  line.hidden = r.success;
  line.textContent = r.success ? '' : `nmhost cannot be used: ${r.error} [${r.code}]`;
}
