// The audit page: the records the "audit trail" line vouches for, newest
// last, a page at a time, with the checkpoint that signs them. Opened from
// the header; the records are read from GET /api/audit as the store holds
// them (every field from the hashed body), never changed here.
const PAGE = 100;

const $ = (id) => document.getElementById(id);

function cell(tr, text, cls) {
  const td = tr.insertCell();
  td.textContent = text === undefined || text === null ? '' : String(text);
  if (cls) td.className = cls;
}

function get(token, path) {
  return fetch(path, { credentials: 'omit', headers: { Authorization: 'Bearer ' + token } }).then(async (r) => {
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(`${body.code || r.status}: ${body.error || r.statusText}`);
    return body;
  });
}

// rows puts records (oldest first) at the top of the table.
function rows(records) {
  const body = $('audit-records').tBodies[0];
  const trs = records.map((rec) => {
    const tr = document.createElement('tr');
    tr.dataset.seq = String(rec.seq);
    const op = rec.operation || {};
    cell(tr, rec.seq, 'seq');
    cell(tr, new Date(rec.ts).toLocaleString(), 'time');
    cell(tr, rec.kind);
    cell(tr, op.agentId);
    cell(tr, op.operation, 'mono');
    cell(tr, rec.kind === 'executed' ? (rec.error ? 'failed' : 'done') : rec.allowed ? 'allowed' : 'denied');
    cell(tr, rec.decidedBy);
    cell(tr, rec.code, 'code');
    cell(tr, rec.reason || rec.error, 'reason');
    return tr;
  });
  body.prepend(...trs);
}

let first = 0; // the oldest seq shown

async function older(token) {
  const after = Math.max(0, first - PAGE - 1);
  const limit = first - 1 - after;
  if (limit < 1) return;
  const page = await get(token, `/api/audit?afterSeq=${after}&limit=${limit}`);
  rows(page.records || []);
  first = after + 1;
  $('audit-older').hidden = first <= 1;
}

// openAudit shows the page: the checkpoint, what the line said of it, and
// the newest records.
export async function openAudit(token) {
  $('audit-page').hidden = false;
  $('audit-records').tBodies[0].replaceChildren();
  const note = $('audit-summary');
  note.textContent = 'loading…';
  try {
    const [cp, page] = await Promise.all([get(token, '/api/audit/checkpoint'), get(token, `/api/audit?tail=1&limit=${PAGE}`)]);
    const records = page.records || [];
    rows(records);
    first = records.length ? records[0].seq : 0;
    $('audit-older').hidden = first <= 1;
    note.textContent = `${cp.size} records, signed ${new Date(cp.time).toLocaleString()} by key ${cp.key.split('+')[0]}. ` +
      `Check: ${$('audit-status').textContent}. Showing the newest ${records.length}.`;
  } catch (e) {
    note.textContent = `The audit trail could not be read: ${e.message}`;
  }
  $('audit-page').scrollIntoView?.();
}

export function wireAudit(token) {
  $('audit-open').addEventListener('click', () => openAudit(token));
  $('audit-older').addEventListener('click', () => older(token));
  $('audit-close').addEventListener('click', () => { $('audit-page').hidden = true; });
}
