// The audit trail's checkpoint, kept by the extension. Anyone who can
// write the host's database can truncate the audit log or rewrite it with
// every hash recomputed, and the log alone would still look whole. So the
// extension keeps the newest checkpoint (the host's signed tree head) it
// has seen in chrome.storage.local, outside the host's data dir, and asks
// the host to prove that the log still extends it (audit-consistency):
// each time a host process starts, shortly after every request it relayed
// for a page (a run, a fetch, an agent's call), at least every minute
// while the host is connected, and when the options page or the popup
// opens. It keeps a newer checkpoint only when the host proved that, and
// never one smaller than the kept one; a break keeps the old checkpoint,
// so the break shows until a person starts a new chain.
//
// What this trusts: the host program (it checks the proof and the
// signature; the extension does not verify note signatures itself) and
// this extension's own storage, which only the extension's own pages and
// service worker may use (restrictStorage: not content scripts). What it
// catches: a log that no longer extends the newest checkpoint taken, that
// is a rollback or rewrite of any record older than that checkpoint. A
// checkpoint is taken about a second after the last relayed request ends
// and within a minute of any record, so a rollback to a state older than
// the last relayed record shows at the next check. What it does not catch:
// a change made before the first check (the chain starts at whatever the
// log holds then), records the host wrote after the last checkpoint and
// before a rollback that came in the same second, and anything while the
// host is never started again (nothing is checked without it).
import { native } from './native.js';
import { checkOnce } from './checkpoint.js';

const KEPT = 'auditCheckpoint'; // {checkpoint, size, time, since}
const STATUS = 'auditStatus'; // the last check's outcome, for the options page and the popup
// When this extension started its chain: a missing checkpoint after that
// is a removal to report, not a first run.
const CHAIN = 'auditChain';

// The extension's own storage holds the checkpoint.
const store = {
  load: async () => {
    const got = await chrome.storage.local.get([KEPT, CHAIN]);
    return { kept: got[KEPT], chain: got[CHAIN] };
  },
  save: ({ kept, chain }) => chrome.storage.local.set({ [KEPT]: kept, [CHAIN]: chain }),
};

async function ask(type, params) {
  try {
    return await native.request(type, params, { timeoutMs: 60000 });
  } catch (e) {
    return { success: false, code: e.code || 'internal_error', error: String(e.message || e) };
  }
}

async function run() {
  const outcome = await checkOnce(store, ask);
  outcome.checkedAt = Date.now();
  await chrome.storage.local.set({ [STATUS]: outcome });
  return outcome;
}

// Checks run one at a time: two at once would both read the same kept
// checkpoint, and the slower could store an older head over a newer one.
let queue = Promise.resolve();

// checkAudit runs one check and resolves with its outcome: {state:
// 'consistent', since, size}, {state: 'broken', code, error, seenAt, size}
// or {state: 'unknown', code, error} (the host could not be asked).
export function checkAudit() {
  const p = queue.then(run);
  queue = p.catch(() => {});
  return p;
}

// restartAudit drops the kept checkpoint and checks again, which keeps the
// present head as the start of a new chain. Only the options page's
// button, a person's decision after a break, calls it.
export function restartAudit() {
  const p = queue.then(() => chrome.storage.local.remove([KEPT, STATUS, CHAIN])).then(run);
  queue = p.catch(() => {});
  return p;
}

// A check about a second after the last relayed request: requests that
// come close together share one check.
const SOON_MS = 1000;
// At least this often while a host process is connected.
const EVERY_MS = 60000;
let soon = 0;
let every = 0;

function warn(e) {
  console.warn('agentgate: audit trail not checked:', e.message || e);
}

// auditSoon asks for a check SOON_MS from now (one for a burst).
export function auditSoon() {
  clearTimeout(soon);
  soon = setTimeout(() => checkAudit().catch(warn), SOON_MS);
}

// watchAudit keeps the checkpoint fresh: a check on each host start, and
// one every EVERY_MS while it runs. The native port keeps the service
// worker alive while connected, so the interval runs as long as there is
// a host to ask.
export function watchAudit() {
  native.onConnect(() => {
    auditSoon();
    clearInterval(every);
    every = setInterval(() => checkAudit().catch(warn), EVERY_MS);
  });
  native.onDisconnect(() => clearInterval(every));
}

// restrictStorage keeps chrome.storage.local (the kept checkpoint, the
// current session) from content scripts, which have it by default: a
// compromised renderer could otherwise switch the session or remove the
// checkpoint.
export function restrictStorage() {
  return chrome.storage.local.setAccessLevel({ accessLevel: 'TRUSTED_CONTEXTS' })
    .catch((e) => console.warn('agentgate: storage not restricted:', e.message || e));
}
