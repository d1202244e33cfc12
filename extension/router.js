// Routes messages: one type -> handler map for the extension's own pages,
// one for content scripts, one for requests the host sends to us.
import { native } from './native.js';
import { browserCall, bindTab, runToken } from './browser.js';
import { prompt, promptLayer, promptAnswered, promptCancel, promptStatus } from './prompts.js';
import { listExamples, installExample } from './examples.js';
import { checkAudit, restartAudit, auditSoon } from './audit.js';
import { pythonStart, pythonProgress, pythonStop, pythonRuns, pythonWarm, pythonState } from './pyruns.js';
import { moduleStart } from './moduleruns.js';

// Requests an extension page may forward to the host.
const PAGE_REQUESTS = new Set([
  'hello', 'list-agents', 'getAgentInfo', 'install-agent', 'uninstall-agent', 'grant', 'revoke',
  'network-fetch', 'run-agent', 'run-workflow', 'list-denials', 'list-preferences', 'revoke-preference', 'list-audit',
  // The options page: the allow-and-log digest and the self-test.
  'preference-digest', 'check-agent',
  // Python agents: the offscreen document, which holds the sandbox, relays its calls.
  'python-run', 'agent-call', 'python-run-end', 'log-denial',
  // Sessions: the popup's picker.
  'list-sessions', 'set-session',
]);

// What a page's request becomes before it goes to the host. A run is bound
// here, in the service worker, to the document its tab holds: the page
// names only the tab, and any context or origin it sends is replaced, so
// no page can point a run at a document it was not started on.
const prepare = {
  'run-agent': async ({ tabId, context, origin, ...params }) => ({ ...params, ...(await bindTab(tabId)) }),
  // A Python run's context also carries its token (browser.js, runToken):
  // Stop, pressed in a page that knows the run by its ref (runRef), stops
  // its calls here.
  'python-run': async ({ tabId, context, origin, runRef, ...params }) => {
    const bound = await bindTab(tabId);
    return { ...params, ...bound, context: { ...bound.context, run: runToken(runRef) } };
  },
};

// The pages' requests in progress that a page's going away ends, by the
// page's ref: the native request's id (see onConnect).
const inflightByRef = new Map();

const pageHandlers = {
  // {type: 'host', request: {type, ...}, ref?}: ref streams progress events
  // back as {type: 'host-event', ref, event}.
  host: async (msg) => {
    const req = msg.request || {};
    if (!PAGE_REQUESTS.has(req.type)) return { success: false, code: 'unknown_type', error: `not forwarded: ${req.type}` };
    const { type, id, ...params } = req;
    const onEvent = msg.ref
      ? (event) => chrome.runtime.sendMessage({ type: 'host-event', ref: msg.ref, event }).catch(() => {})
      : undefined;
    try {
      const sent = prepare[type] ? await prepare[type](params) : params;
      const onSent = msg.ref ? (id) => inflightByRef.set(String(msg.ref), id) : undefined;
      return await native.request(type, sent, { onEvent, onSent, timeoutMs: type === 'run-agent' || type === 'run-workflow' ? 660000 : 120000 });
    } catch (e) {
      return { success: false, code: e.code || 'internal_error', error: String(e.message || e) };
    } finally {
      if (msg.ref) inflightByRef.delete(String(msg.ref));
      // What the host recorded for this request is covered by a
      // checkpoint a moment later (audit.js).
      auditSoon();
    }
  },
  // The window's answer, with its digest of the prompt it showed (shown.js).
  'prompt-answer': (msg) => promptAnswered(String(msg.promptId), String(msg.answer), msg.shown, msg.about),
  'prompt-status': async (msg) => promptStatus(String(msg.promptId)),
  // The bundled examples: listed for the install sheet, installed only
  // when a page asks after the person confirmed it (examples.js).
  examples: () => listExamples(),
  'install-example': async (msg) => {
    try {
      return await installExample(msg);
    } finally {
      auditSoon();
    }
  },
  // The audit trail's check (audit.js): the options page and the popup ask on open.
  'audit-check': () => checkAudit(),
  'audit-restart': () => restartAudit(),
  // Python runs (pyruns.js): a page starts, stops and follows them; the
  // offscreen document runs them and reports.
  'python-start': pythonStart,
  'python-stop': pythonStop,
  'python-runs': pythonRuns,
  'python-warm': pythonWarm,
  'python-state': pythonState,
  'python-progress': pythonProgress,
  // A module's run (moduleruns.js): held here, so it outlives the popup
  // that started it; python-stop and python-runs serve it too.
  'module-start': moduleStart,
};

// The content-script world (the page mediator, content.js) asks nothing of
// the service worker: a compromised renderer holds that world, and a
// message from it could name any agent. Its refusals reach the denial log
// as its answers to the service worker's calls, in the run's name and
// bounded per run (browser.js, logPageRefusal).
const contentHandlers = {};

export const hostRequests = { 'browser-call': browserCall, prompt, 'prompt-layer': promptLayer, 'prompt-cancel': promptCancel };
native.setHostHandlers(hostRequests);

// isExtensionPage tells the extension's own pages from content scripts.
function isExtensionPage(sender) {
  return sender?.id === chrome.runtime.id && typeof sender.url === 'string' && sender.url.startsWith(chrome.runtime.getURL('')) &&
    !sender.tab?.url?.startsWith('http');
}

// A page holds a port open while something it started runs: 'request:REF'
// for a request sent with that ref (a module's run: the popup closing ends
// it), 'python-run' for a Python run, held by the offscreen document that
// runs it (it posts {runId, agentId} once it has one, {ended: true} when
// it ends it itself). The port closing without that end (that document
// went away) ends the run in the host: its calls and prompts with it. A
// Python run does not end with the popup that asked for it (pyruns.js).
const portHandlers = {
  request: (port, ref) => {
    port.onDisconnect.addListener(() => {
      const id = inflightByRef.get(ref);
      if (id) native.cancel(id);
    });
  },
  'python-run': (port) => {
    let open = null;
    port.onMessage.addListener((m) => {
      if (m?.ended) open = null;
      else if (typeof m?.runId === 'string' && typeof m?.agentId === 'string') open = { runId: m.runId, agentId: m.agentId };
    });
    port.onDisconnect.addListener(() => {
      if (open) native.request('python-run-end', { ...open, status: 'cancelled' }).catch(() => {});
    });
  },
};

// own is the table's own entry for key: a sender's "constructor" or
// "toString" names no handler, not what every object inherits.
function own(table, key) {
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

export function onConnect(port) {
  const [kind, ref = ''] = String(port.name).split(/:(.*)/s);
  const handler = own(portHandlers, kind);
  if (!handler || !isExtensionPage(port.sender)) {
    port.disconnect();
    return;
  }
  handler(port, ref);
}

export function onMessage(msg, sender, sendResponse) {
  if (!msg || typeof msg !== 'object' || msg.target === 'offscreen' || sender.id !== chrome.runtime.id) return false;
  const fromPage = isExtensionPage(sender);
  const handler = own(fromPage ? pageHandlers : contentHandlers, msg.type);
  if (!handler) return false;
  Promise.resolve().then(() => handler(msg, sender)).then(sendResponse, (e) => sendResponse({ success: false, code: 'internal_error', error: String(e) }));
  return true; // the answer comes asynchronously
}

// Installing the extension installs no agent: the bundled examples wait
// for a person to confirm each one (examples.js).
export function onInstalled() {
  onStartup();
}

// On each browser start (and install), check the audit trail against the
// kept checkpoint; the outcome waits in storage for the options page.
export function onStartup() {
  checkAudit().catch((e) => console.warn('agentgate: audit trail not checked:', e.message || e));
}
