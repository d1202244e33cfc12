// Extension pages talk to the host through the service worker, which owns
// the native port.
export async function host(type, params = {}, onEvent) {
  const ref = onEvent ? crypto.randomUUID() : undefined;
  let listener;
  if (onEvent) {
    listener = (msg) => {
      if (msg?.type === 'host-event' && msg.ref === ref) onEvent(msg.event);
    };
    chrome.runtime.onMessage.addListener(listener);
  }
  try {
    return await chrome.runtime.sendMessage({ type: 'host', request: { type, ...params }, ref });
  } finally {
    if (listener) chrome.runtime.onMessage.removeListener(listener);
  }
}

// el builds an element with text only: host data never becomes markup.
export function el(tag, text, attrs = {}) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}
