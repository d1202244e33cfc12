// The example agents bundled in agents/ (built by scripts/build-agents.sh;
// the extension works without them). They arrive uninstalled: installing
// one grants it what its profile asks for, so only a person's confirmation
// on the install sheet (consent.js, in an extension page) installs one,
// never the extension's own start.
import { native } from './native.js';

function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

async function bundled() {
  let index;
  try {
    const r = await fetch(chrome.runtime.getURL('agents/index.json'));
    if (!r.ok) return [];
    index = await r.json();
  } catch {
    return []; // none bundled
  }
  const out = [];
  for (const a of index.agents || []) {
    const profile = await (await fetch(chrome.runtime.getURL(`agents/${a.profile}`))).json();
    out.push({ entry: a, profile });
  }
  return out;
}

// listExamples is every bundled agent's profile, for the install sheet.
export async function listExamples() {
  const all = await bundled();
  return { success: true, data: { examples: all.map(({ entry, profile }) => ({ profile: { ...profile, runtime: entry.runtime || profile.runtime || 'wasm' } })) } };
}

// installExample installs the bundled agent agentId: the page asked only
// after the person confirmed its sheet.
export async function installExample(msg) {
  const agentId = String(msg?.agentId || '');
  const found = (await bundled()).find((x) => x.profile.agentId === agentId);
  if (!found) return { success: false, code: 'unknown_agent', error: `no bundled example ${agentId}` };
  const { entry, profile } = found;
  const url = chrome.runtime.getURL(`agents/${entry.module}`);
  // A Python agent's module is its source, sent as text.
  const module = entry.runtime === 'python'
    ? await (await fetch(url)).text()
    : toBase64(new Uint8Array(await (await fetch(url)).arrayBuffer()));
  return native.request('install-agent', { profile, module });
}
