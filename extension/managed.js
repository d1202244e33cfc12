// Sends the rules Chrome's enterprise policy put in the extension's
// managed storage (schema: managed_schema.json) to each host process as
// it starts: the host adds them to the machine's own policy file, and
// rules only add, so nothing here can loosen what an administrator set.
import { native } from './native.js';

async function sendManagedPolicy() {
  let policy = {};
  try {
    policy = await chrome.storage.managed.get(null);
  } catch {
    // No managed storage on this browser: no rules from it.
    return;
  }
  if (!policy || Object.keys(policy).length === 0) return;
  try {
    await native.request('managed-policy', { policy });
  } catch (e) {
    console.warn('agentgate: managed policy not taken by the host:', e.message || e);
  }
}

export function watchManagedPolicy() {
  native.onConnect(() => { sendManagedPolicy(); });
  chrome.storage.managed.onChanged?.addListener(() => { if (native.port) sendManagedPolicy(); });
}
