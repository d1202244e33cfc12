// The audit trail's checkpoint, kept by the extension. Anyone who can
// write the host's database can truncate the audit log or rewrite it with
// every hash recomputed, and the log alone would still look whole. So the
// extension keeps the newest checkpoint (the host's signed tree head) it
// has seen in chrome.storage.local, outside the host's data dir, and on
// each start, and whenever the options page opens, asks the host to prove
// that the log still extends it (audit-consistency). It keeps a newer
// checkpoint only when the host proved that, and never one smaller than
// the kept one; a break keeps the old checkpoint, so the break shows until
// a person starts a new chain.
//
// What this trusts: the host program (it checks the proof and the
// signature; the extension does not verify note signatures itself) and
// this extension's own storage. What it catches: the database changed
// behind the host's back between two checks.
import { native } from './native.js';

const KEPT = 'auditCheckpoint'; // {checkpoint, size, time, since}
const STATUS = 'auditStatus'; // the last check's outcome, for the options page
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
  const kept = validKept((await chrome.storage.local.get(KEPT))[KEPT]);
  let outcome;
  if (!kept) {
    const r = await ask('audit-checkpoint', {});
    if (!r.success) {
      outcome = { state: 'unknown', code: r.code, error: r.error };
    } else if (sizeOf(r.data.checkpoint) !== r.data.size) {
      outcome = { state: 'unknown', code: 'bad_request', error: 'the host sent a checkpoint that does not say its size' };
    } else {
      const { checkpoint, size, time } = r.data;
      await chrome.storage.local.set({ [KEPT]: { checkpoint, size, time, since: time } });
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
      await chrome.storage.local.set({ [KEPT]: { checkpoint: d.checkpoint, size: d.size, time: d.time, since } });
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
  const p = queue.then(() => chrome.storage.local.remove([KEPT, STATUS])).then(run);
  queue = p.catch(() => {});
  return p;
}
