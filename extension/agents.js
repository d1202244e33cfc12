// Installs the example agents bundled in agents/ (built by
// scripts/build-agents.sh; the extension works without them).
import { native } from './native.js';

function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

export async function installBundledAgents() {
  let index;
  try {
    const r = await fetch(chrome.runtime.getURL('agents/index.json'));
    if (!r.ok) return;
    index = await r.json();
  } catch {
    return; // none bundled
  }
  for (const a of index.agents || []) {
    const profile = await (await fetch(chrome.runtime.getURL(`agents/${a.profile}`))).json();
    if (a.runtime === 'python') {
      // A Python agent's module is its source, sent as text.
      const source = await (await fetch(chrome.runtime.getURL(`agents/${a.module}`))).text();
      const r = await native.request('install-agent', { profile, module: source });
      if (!r.success) console.warn(`agentgate: ${profile.agentId}: ${r.code}: ${r.error}`);
      continue;
    }
    const module = new Uint8Array(await (await fetch(chrome.runtime.getURL(`agents/${a.module}`))).arrayBuffer());
    const r = await native.request('install-agent', { profile, module: toBase64(module) });
    if (!r.success) console.warn(`agentgate: ${profile.agentId}: ${r.code}: ${r.error}`);
  }
}
