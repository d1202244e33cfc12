// The audit checkpoint check: one module for the extension (audit.js,
// auditview.js) and for nmhost serve's viewer, which serves a byte-for-byte
// copy (internal/viewer/static/checkpoint.js; internal/viewer
// TestCheckpointModuleIsTheExtensions keeps the two the same). What the
// kept checkpoint and the host's answer mean is decided here once; each
// side only says where the checkpoint is kept and how the host is asked.
//
// The rules: keep the newest checkpoint (the host's signed tree head)
// seen, outside the host's data dir; ask the host to prove the log still
// extends it; keep a newer one only when it proved that, and never a
// smaller one; a kept checkpoint that is malformed, or gone after a chain
// was started, is a break, never replaced silently: only a person starts
// a new chain.

// The codes of a break: the host's, and two about the kept checkpoint.
const BREAKS = Object.freeze({
  audit_truncated: (at) => `the log is shorter than the checkpoint seen at ${at}: records were removed`,
  audit_inconsistent: (at) => `the log does not extend the checkpoint seen at ${at}: records were rewritten`,
  audit_bad_signature: (at) => `the checkpoint seen at ${at} is not signed by the host's key`,
  checkpoint_missing: (at) => `the checkpoint kept since ${at} is gone from where it was kept`,
  checkpoint_malformed: (at) => `the kept checkpoint (chain started ${at}) is malformed`,
});

// sizeOf reads the record count from a checkpoint's text (its second line).
export function sizeOf(checkpoint) {
  const line = String(checkpoint).split('\n')[1];
  return /^(0|[1-9][0-9]{0,17})$/.test(line || '') ? Number(line) : -1;
}

function validKept(k) {
  return k && typeof k.checkpoint === 'string' && Number.isSafeInteger(k.size) && sizeOf(k.checkpoint) === k.size ? k : null;
}

// checkOnce runs one check and resolves with its outcome: {state:
// 'consistent', since, size}, {state: 'broken', code, error, seenAt,
// size} or {state: 'unknown', code, error} (the host could not be asked).
//   store.load() resolves with {kept, chain}: the kept checkpoint
//     ({checkpoint, size, time, since}) and the chain's start ({started}),
//     each undefined when nothing is kept;
//   store.save({kept, chain}) keeps both;
//   ask(type, params) asks the host 'audit-checkpoint' or
//     'audit-consistency' and resolves with its reply ({success, data} or
//     {success: false, code, error}); it never rejects.
// The caller runs checks one at a time: two at once would read the same
// kept checkpoint, and the slower could keep an older head.
export async function checkOnce(store, ask, again = 1) {
  const { kept: raw, chain } = await store.load();
  // What is kept may change while the host is asked (a removal, a spoilt
  // value): that state is checked afresh, once, and a break made meanwhile
  // is reported, never written over with the host's new checkpoint.
  const changed = async () => JSON.stringify((await store.load()).kept) !== JSON.stringify(raw);
  const kept = validKept(raw);
  if (raw !== undefined && raw !== null && !kept) {
    return { state: 'broken', code: 'checkpoint_malformed', error: 'the kept audit checkpoint is malformed', seenAt: chain?.started };
  }
  if (!kept && chain) {
    return { state: 'broken', code: 'checkpoint_missing', error: 'the kept audit checkpoint is gone', seenAt: chain.started };
  }
  if (!kept) {
    const r = await ask('audit-checkpoint', {});
    if (!r.success) return { state: 'unknown', code: r.code, error: r.error };
    const { checkpoint, size, time } = r.data || {};
    if (sizeOf(checkpoint) !== size) return { state: 'unknown', code: 'bad_request', error: 'the host sent a checkpoint that does not say its size' };
    if (await changed()) return again > 0 ? checkOnce(store, ask, again - 1) : { state: 'unknown', code: 'internal_error', error: 'the kept audit checkpoint kept changing while it was checked' };
    await store.save({ kept: { checkpoint, size, time, since: time }, chain: { started: time } });
    return { state: 'consistent', since: time, size };
  }
  const r = await ask('audit-consistency', { checkpoint: kept.checkpoint });
  if (!r.success) {
    return Object.hasOwn(BREAKS, r.code)
      ? { state: 'broken', code: r.code, error: r.error, seenAt: kept.time, size: kept.size }
      : { state: 'unknown', code: r.code, error: r.error };
  }
  const d = r.data || {};
  // Said consistent: what comes back must at least not go backwards from
  // what is kept.
  if (d.consistent !== true || d.oldSize !== kept.size || !(d.size >= kept.size) || sizeOf(d.checkpoint) !== d.size) {
    return { state: 'broken', code: 'audit_inconsistent', error: 'the host answered with a checkpoint smaller than the one kept', seenAt: kept.time, size: kept.size };
  }
  if (await changed()) return again > 0 ? checkOnce(store, ask, again - 1) : { state: 'unknown', code: 'internal_error', error: 'the kept audit checkpoint kept changing while it was checked' };
  const since = kept.since || kept.time;
  await store.save({ kept: { checkpoint: d.checkpoint, size: d.size, time: d.time, since }, chain: chain || { started: since } });
  return { state: 'consistent', since, size: d.size };
}

function when(ms) {
  return ms ? new Date(ms).toLocaleString() : 'an unknown time';
}

// describe is the line a person reads for an outcome.
export function describe(o) {
  if (o?.state === 'consistent') return `audit trail consistent since ${when(o.since)} (${o.size} records)`;
  if (o?.state === 'broken' && Object.hasOwn(BREAKS, o.code)) return `audit trail broken: ${BREAKS[o.code](when(o.seenAt))} (${o.code})`;
  return `audit trail not checked: ${o?.code || 'internal_error'}: ${o?.error || 'no answer'}`;
}
