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

const KEPT = 'auditCheckpoint'; // {checkpoint, size, time, since}
const STATUS = 'auditStatus'; // the last check's outcome, for the options page and the popup
// When this extension started its chain: a missing checkpoint after that
// is a removal to report, not a first run.
const CHAIN = 'auditChain';
const BREAKS = new Set(['audit_truncated', 'audit_inconsistent', 'audit_bad_signature']);

// sizeOf reads the record count from a checkpoint's text (its second line).
function sizeOf(checkpoint) {
  const line = String(checkpoint).split('\n')[1];
  return /^(0|[1-9][0-9]{0,17})$/.test(line || '') ? Number(line) : -1;
}

function validKept(k) {
  return k && typeof k.checkpoint === 'string' && Number.isSafeInteger(k.size) && sizeOf(k.checkpoint) === k.size ? k : null;
}

async function ask(type, params) {
  try {
    return await native.request(type, params, { timeoutMs: 60000 });
  } catch (e) {
    return { success: false, code: e.code || 'internal_error', error: String(e.message || e) };
  }
}

async function run() {
  const got = await chrome.storage.local.get([KEPT, CHAIN]);
  const kept = validKept(got[KEPT]);
  let outcome;
  if (got[KEPT] !== undefined && !kept) {
    // Never replaced silently: a kept checkpoint that is not one is
    // reported, and only a person starts a new chain (restartAudit).
    outcome = { state: 'broken', code: 'checkpoint_malformed', error: 'the kept audit checkpoint is malformed', seenAt: got[CHAIN]?.started };
  } else if (!kept && got[CHAIN]) {
    outcome = { state: 'broken', code: 'checkpoint_missing', error: 'the kept audit checkpoint is gone from the extension\'s storage', seenAt: got[CHAIN].started };
  } else if (!kept) {
    const r = await ask('audit-checkpoint', {});
    if (!r.success) {
      outcome = { state: 'unknown', code: r.code, error: r.error };
    } else if (sizeOf(r.data.checkpoint) !== r.data.size) {
      outcome = { state: 'unknown', code: 'bad_request', error: 'the host sent a checkpoint that does not say its size' };
    } else {
      const { checkpoint, size, time } = r.data;
      await chrome.storage.local.set({ [KEPT]: { checkpoint, size, time, since: time }, [CHAIN]: { started: time } });
      outcome = { state: 'consistent', since: time, size };
    }
  } else {
    const r = await ask('audit-consistency', { checkpoint: kept.checkpoint });
    const d = r.data || {};
    if (!r.success) {
      outcome = BREAKS.has(r.code)
        ? { state: 'broken', code: r.code, error: r.error, seenAt: kept.time, size: kept.size }
        : { state: 'unknown', code: r.code, error: r.error };
    } else if (d.consistent !== true || d.oldSize !== kept.size || !(d.size >= kept.size) || sizeOf(d.checkpoint) !== d.size) {
      // Said consistent, but what came back goes backwards from what is kept.
      outcome = { state: 'broken', code: 'audit_inconsistent', error: 'the host answered with a checkpoint smaller than the one kept', seenAt: kept.time, size: kept.size };
    } else {
      const since = kept.since || kept.time;
      await chrome.storage.local.set({ [KEPT]: { checkpoint: d.checkpoint, size: d.size, time: d.time, since }, [CHAIN]: got[CHAIN] || { started: since } });
      outcome = { state: 'consistent', since, size: d.size };
    }
  }
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
