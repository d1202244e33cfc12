// fromWorker tells the service worker's messages from any other context's.
// Every context of the extension gets runtime messages, content scripts
// can send them, and our id alone does not tell a page's mediator from the
// worker. A message from the service worker carries our id and the
// worker's script URL and nothing else: no tab, frame or document (checked
// in Chromium); any extension page or content script has a document.
const WORKER_URL = chrome.runtime.getURL('sw.js');

export const fromWorker = (sender) => sender.id === chrome.runtime.id && sender.url === WORKER_URL &&
  sender.tab === undefined && sender.frameId === undefined && sender.documentId === undefined;
