// The permission mediator's first layer in the page: it builds the
// restricted page API for an agent's call and enforces the profile's
// domAccess before touching the DOM. The host has already decided the call
// (layer 2); a refusal here is this document's answer, which the service
// worker records in the run's name (browser.js): this world sends nothing
// of its own, since a compromised renderer could send anything from it.
//
// It is not in every page: the service worker injects it into the tab a run
// is bound to when the run starts (chrome.scripting, under activeTab), and
// this file's value (the last expression) is the document's own origin,
// which the run is bound to with the document's id. Every call carries that
// origin; a document whose origin is another one refuses with page_changed.
(() => {
  // Injected again for every run on the same document: one listener is
  // enough. The mark is a string because a page can put elements on window
  // by id (named access), never a string.
  const MARK = 'agentgate-page-mediator-1';
  if (globalThis.agentgatePageMediator === MARK) return location.origin;
  globalThis.agentgatePageMediator = MARK;

  const MAX_TEXT = 1 << 20;

  const describe = (el) => ({
    found: true,
    text: (el.textContent || '').trim().slice(0, MAX_TEXT),
    tag: el.tagName,
    attributes: Object.fromEntries(Array.from(el.attributes).slice(0, 50).map((a) => [a.name, a.value.slice(0, 2000)])),
  });

  const deny = (reason) => ({ success: false, code: 'permission_not_granted', error: reason });

  const select = (selector, all) => {
    try {
      return all ? Array.from(document.querySelectorAll(selector)) : document.querySelector(selector);
    } catch {
      return undefined; // an invalid selector
    }
  };

  const calls = {
    'page.read.getPageText': () => ({ success: true, data: { text: (document.body?.innerText || '').slice(0, MAX_TEXT), url: location.href, title: document.title } }),
    'page.read.querySelector': (p) => {
      const el = select(String(p.selector || ''), false);
      if (el === undefined) return { success: false, code: 'bad_request', error: 'invalid selector' };
      return { success: true, data: el ? describe(el) : { found: false } };
    },
    'page.read.querySelectorAll': (p) => {
      const els = select(String(p.selector || ''), true);
      if (els === undefined) return { success: false, code: 'bad_request', error: 'invalid selector' };
      const limit = Math.min(Math.max(Number(p.limit) || 1000, 1), 1000);
      return { success: true, data: { elements: els.slice(0, limit).map(describe) } };
    },
    'page.write.setElementText': (p) => {
      const el = select(String(p.selector || ''), false);
      if (el === undefined) return { success: false, code: 'bad_request', error: 'invalid selector' };
      if (!el) return { success: true, data: { found: false } };
      el.textContent = String(p.text ?? '');
      return { success: true, data: { found: true } };
    },
  };

  chrome.runtime.onMessage.addListener((msg, sender, sendResponse) => {
    if (sender.id !== chrome.runtime.id || msg?.type !== 'agentgate-call') return false;
    // The run was approved for one origin; prompts and remembered answers
    // were keyed to it. The service worker already addresses this document
    // only; this check holds even if it did not. The service worker logs
    // the refusal (it logs page_changed for a gone document too).
    if (typeof msg.origin !== 'string' || msg.origin !== location.origin) {
      sendResponse({ success: false, code: 'page_changed', error: `the run is bound to ${msg.origin || 'no origin'}, this page is ${location.origin}` });
      return false;
    }
    const call = calls[msg.call];
    if (!call) {
      sendResponse({ success: false, code: 'unknown_permission', error: `unknown page call ${msg.call}` });
      return false;
    }
    const dom = msg.domAccess;
    if (msg.call.startsWith('page.read.') && dom !== 'read-only' && dom !== 'full') {
      sendResponse(deny(`domAccess is ${dom}`));
      return false;
    }
    if (msg.call.startsWith('page.write.') && dom !== 'full') {
      sendResponse(deny(`domAccess is ${dom}`));
      return false;
    }
    sendResponse(call(msg.params || {}));
    return false;
  });
  return location.origin;
})();
