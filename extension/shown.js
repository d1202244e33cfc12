// The digest of what a prompt window shows: the window computes it over
// the prompt exactly as it received it and sends it with the answer; the
// host computed the same over the prompt it sent (internal/shown), and
// takes the answer only when the two are equal. So an answer counts for
// the one prompt its window showed, never for another that happens to
// share its id or its place in a queue. docs/protocol.md ("prompt")
// defines the encoding; internal/shown is the host's side of it.

const PREFIX = 'agentgate-prompt-shown-v1\n';
const utf8 = new TextEncoder();

// byBytes orders names by their UTF-8 bytes, as Go's string order does
// (JavaScript's own sort compares UTF-16 units, which differs past the
// Basic Multilingual Plane).
function byBytes(a, b) {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
}

// encode appends v's canonical form to parts (strings and byte arrays).
function encode(v, parts) {
  if (v === null) parts.push('n');
  else if (v === true) parts.push('t');
  else if (v === false) parts.push('f');
  else if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new Error(`shown: only integers are encoded, not ${v}`);
    parts.push(`d${v};`);
  } else if (typeof v === 'string') {
    const b = utf8.encode(v);
    parts.push(`s${b.length}:`, b);
  } else if (Array.isArray(v)) {
    parts.push(`a${v.length}:`);
    for (const e of v) encode(e, parts);
  } else if (typeof v === 'object') {
    const keys = Object.keys(v).sort(byBytes);
    parts.push(`o${keys.length}:`);
    for (const k of keys) {
      encode(k, parts);
      encode(v[k], parts);
    }
  } else {
    throw new Error(`shown: cannot encode ${typeof v}`);
  }
}

// shownDigest is SHA-256, in lowercase hex, of the prefix and the
// canonical form of v (a value read from JSON).
export async function shownDigest(v) {
  const parts = [PREFIX];
  encode(v, parts);
  const bytes = parts.map((p) => (typeof p === 'string' ? utf8.encode(p) : p));
  const all = new Uint8Array(bytes.reduce((n, b) => n + b.length, 0));
  let off = 0;
  for (const b of bytes) {
    all.set(b, off);
    off += b.length;
  }
  const sum = new Uint8Array(await crypto.subtle.digest('SHA-256', all));
  return Array.from(sum, (x) => x.toString(16).padStart(2, '0')).join('');
}
