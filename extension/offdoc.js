// The one owner of the offscreen document (an extension has at most one).
// It serves two needs, named in its reasons: the clipboard (service
// workers have none) and Python runs (pyhost.js), whose sandbox frames
// (IFRAME_SCRIPTING) hold the workers Pyodide runs in (WORKERS). Chrome
// keeps an offscreen document open until the extension closes it (only
// an AUDIO_PLAYBACK-only document is closed for silence), and nothing here
// closes it, so a run in progress keeps its home; a document that went
// away anyway is made again on the next need.
const URL_ = 'offscreen.html';
let creating = null;

export async function ensureOffscreen() {
  const url = chrome.runtime.getURL(URL_);
  const existing = await chrome.runtime.getContexts({ contextTypes: ['OFFSCREEN_DOCUMENT'], documentUrls: [url] });
  if (existing.length > 0) return;
  // Two callers at once would both create: the second waits for the first.
  creating ??= chrome.offscreen.createDocument({
    url: URL_,
    reasons: ['CLIPBOARD', 'IFRAME_SCRIPTING', 'WORKERS'],
    justification: 'Agents granted clipboard access read and write the clipboard here; Python agents run here, in a sandboxed frame and its worker, so a run outlives the popup that started it.',
  }).catch((e) => {
    if (!String(e.message).includes('single offscreen')) throw e;
  }).finally(() => { creating = null; });
  await creating;
}

// isOffscreen tells the offscreen document's messages from other pages'.
export function isOffscreen(sender) {
  return sender?.id === chrome.runtime.id && sender.url === chrome.runtime.getURL(URL_) && sender.tab === undefined;
}
