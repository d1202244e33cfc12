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

// showHostProblem asks the host hello and, when no host answers or its
// protocol version is not this extension's, says so in element id and
// resolves false. A host that is not installed (Chrome finds no host
// manifest) gets the two lines that fix it, with this extension's id;
// a host of another version, the words native.js chose: which side is
// older and what to update.
export async function showHostProblem(id) {
  const r = await host('hello');
  const box = document.getElementById(id);
  if (!box) return r.success;
  box.hidden = r.success;
  if (r.success) {
    box.replaceChildren();
    return true;
  }
  const missing = /not found|forbidden|host_unavailable/i.test(`${r.code} ${r.error}`);
  if (!missing) {
    box.replaceChildren(el('strong', 'nmhost cannot be used: '), `${r.error} [${r.code}]`);
    box.dataset.problem = r.code;
    return false;
  }
  box.dataset.problem = 'host_missing';
  const ext = chrome.runtime.id;
  box.replaceChildren(
    el('strong', 'agentgate needs its helper program, nmhost, and cannot find it.'),
    el('p', 'Install it for this browser, then check it, in a terminal:'),
    el('pre', `nmhost install --extension-id ${ext}\nnmhost doctor --extension-id ${ext}`, { class: 'commands' }),
    el('p', 'Then open this window again. The README says how to build nmhost.', { class: 'small' }),
  );
  box.title = `Chrome said: ${r.error}`;
  return false;
}
