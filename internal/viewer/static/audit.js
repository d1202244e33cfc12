// The audit trail's checkpoint, kept by this page. The server's database
// can be changed behind its back by anyone who can write the file; a log
// truncated or rewritten with every hash recomputed still looks whole on
// its own. So the page keeps the newest checkpoint (signed tree head) it
// has seen in this browser's localStorage, outside the data dir, and on
// each load asks the server to prove that the log still extends it. What
// the answer means is decided by checkpoint.js, the extension's own module
// served as it is. localStorage belongs to this origin, port included:
// with `nmhost serve --port N` the chain spans runs.
import { checkOnce, describe } from './checkpoint.js';

const keptKey = 'nmhost-audit-checkpoint';
const chainKey = 'nmhost-audit-chain';

function read(key) {
  const raw = localStorage.getItem(key);
  if (raw === null) return undefined;
  try {
    return JSON.parse(raw);
  } catch {
    return raw; // kept, but not a checkpoint: checkOnce reports it malformed
  }
}

// The page's localStorage holds the checkpoint. A save never replaces a
// bigger one another tab kept meanwhile.
const store = {
  load: async () => ({ kept: read(keptKey), chain: read(chainKey) }),
  save: async ({ kept, chain }) => {
    const now = read(keptKey);
    if (now && Number.isSafeInteger(now.size) && now.size > kept.size) return;
    localStorage.setItem(keptKey, JSON.stringify(kept));
    localStorage.setItem(chainKey, JSON.stringify(chain));
  },
};

// The server's two endpoints, answering as the host's messages do.
const endpoints = {
  'audit-checkpoint': () => ({ path: '/api/audit/checkpoint' }),
  'audit-consistency': (params) => ({
    path: '/api/audit/consistency',
    init: { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(params) },
  }),
};

function asker(token) {
  return async (type, params) => {
    const { path, init = {} } = endpoints[type](params);
    try {
      const r = await fetch(path, { ...init, credentials: 'omit', headers: { ...init.headers, Authorization: 'Bearer ' + token } });
      const body = await r.json().catch(() => ({}));
      return r.ok ? { success: true, data: body } : { success: false, code: body.code || String(r.status), error: body.error || r.statusText };
    } catch (e) {
      return { success: false, code: 'internal_error', error: String(e.message || e) };
    }
  };
}

// forget drops the kept checkpoint and the chain: the next check starts a
// new chain from the log as it is. Only a person's click does this.
export function forget() {
  localStorage.removeItem(keptKey);
  localStorage.removeItem(chainKey);
}

// show runs the check and puts the outcome in the page.
export async function show(token, line, restart) {
  let o;
  try {
    o = await checkOnce(store, asker(token));
  } catch (e) {
    o = { state: 'unknown', code: 'internal_error', error: String(e.message || e) };
  }
  line.textContent = describe(o);
  line.className = 'audit ' + o.state;
  line.title = o.error || '';
  restart.hidden = o.state !== 'broken';
}
