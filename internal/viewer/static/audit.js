// The audit trail's checkpoint, kept by this page. The server's database
// can be changed behind its back by anyone who can write the file; a log
// truncated or rewritten with every hash recomputed still looks whole on
// its own. So the page keeps the newest checkpoint (signed tree head) it
// has seen in this browser's localStorage, outside the data dir, and on
// each load asks the server to prove that the log still extends it. It
// keeps a newer checkpoint only when the server proved that, and never a
// smaller one. localStorage belongs to this origin, port included: with
// `nmhost serve --port N` the chain spans runs.

const keptKey = 'nmhost-audit-checkpoint';
const breaks = {
  audit_truncated: (at) => `the log is shorter than the checkpoint seen at ${at}: records were removed`,
  audit_inconsistent: (at) => `the log does not extend the checkpoint seen at ${at}: records were rewritten`,
  audit_bad_signature: (at) => `the checkpoint seen at ${at} is not signed by this data dir's key`,
};

function when(ms) {
  return ms ? new Date(ms).toLocaleString() : 'an unknown time';
}

// sizeOf reads the record count from a checkpoint's text (its second line).
function sizeOf(checkpoint) {
  const line = String(checkpoint).split('\n')[1];
  return /^(0|[1-9][0-9]{0,17})$/.test(line || '') ? Number(line) : -1;
}

function readKept() {
  try {
    const k = JSON.parse(localStorage.getItem(keptKey) || 'null');
    return k && typeof k.checkpoint === 'string' && Number.isSafeInteger(k.size) ? k : null;
  } catch {
    return null;
  }
}

// keep stores k unless a newer checkpoint is already kept (another tab).
function keep(k) {
  const now = readKept();
  if (now && now.size > k.size) return;
  localStorage.setItem(keptKey, JSON.stringify(k));
}

async function call(token, path, init = {}) {
  const r = await fetch(path, { ...init, credentials: 'omit', headers: { ...init.headers, Authorization: 'Bearer ' + token } });
  const body = await r.json().catch(() => ({}));
  return r.ok ? { ok: true, data: body } : { ok: false, code: body.code || String(r.status), error: body.error || r.statusText };
}

// check returns the outcome: {state: 'consistent', since, size} (since is
// when the oldest checkpoint of the unbroken chain was signed), {state:
// 'broken', code, error, seenAt} or {state: 'unknown', error}.
export async function check(token) {
  const kept = readKept();
  if (!kept) {
    const r = await call(token, '/api/audit/checkpoint');
    if (!r.ok) return { state: 'unknown', error: `${r.code}: ${r.error}` };
    const { checkpoint, size, time } = r.data;
    if (sizeOf(checkpoint) !== size) return { state: 'unknown', error: 'the server sent a checkpoint that does not say its size' };
    keep({ checkpoint, size, time, since: time });
    return { state: 'consistent', since: time, size };
  }
  const r = await call(token, '/api/audit/consistency', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ checkpoint: kept.checkpoint }),
  });
  if (!r.ok) {
    if (breaks[r.code]) return { state: 'broken', code: r.code, error: r.error, seenAt: kept.time, size: kept.size };
    return { state: 'unknown', error: `${r.code}: ${r.error}` };
  }
  const d = r.data;
  // The server said consistent; what it hands back must at least not go
  // backwards from what this page kept.
  if (d.consistent !== true || d.oldSize !== kept.size || !(d.size >= kept.size) || sizeOf(d.checkpoint) !== d.size) {
    return { state: 'broken', code: 'audit_inconsistent', error: 'the server answered with a checkpoint smaller than the one kept', seenAt: kept.time, size: kept.size };
  }
  const since = kept.since || kept.time;
  keep({ checkpoint: d.checkpoint, size: d.size, time: d.time, since });
  return { state: 'consistent', since, size: d.size };
}

// describe is the line a person reads.
export function describe(o) {
  switch (o.state) {
    case 'consistent':
      return `audit trail consistent since ${when(o.since)} (${o.size} records)`;
    case 'broken':
      return `audit trail broken: ${breaks[o.code](when(o.seenAt))} (${o.code})`;
  }
  return `audit trail not checked: ${o.error}`;
}

// forget drops the kept checkpoint: the next check starts a new chain from
// the log as it is. Only a person's click does this.
export function forget() {
  localStorage.removeItem(keptKey);
}

// show runs the check and puts the outcome in the page.
export async function show(token, line, restart) {
  let o;
  try {
    o = await check(token);
  } catch (e) {
    o = { state: 'unknown', error: String(e.message || e) };
  }
  line.textContent = describe(o);
  line.className = 'audit ' + o.state;
  line.title = o.error || '';
  restart.hidden = o.state !== 'broken';
}
