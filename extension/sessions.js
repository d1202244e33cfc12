// The current session: the one every run from the popup and the options
// page works in (its level and workspace). Its id is kept in
// chrome.storage.local; the sessions themselves are the host's
// (list-sessions, set-session), the same ones nmhost session list shows.
import { host } from './host.js';

const KEY = 'currentSession';

// currentSession is the kept id, or '' (the next run starts a session).
export async function currentSession() {
  const v = (await chrome.storage.local.get(KEY))[KEY];
  return typeof v === 'string' ? v : '';
}

export async function setCurrentSession(id) {
  await chrome.storage.local.set({ [KEY]: String(id || '') });
}

// listSessions is the host's sessions, most recently changed first.
export async function listSessions() {
  const r = await host('list-sessions');
  if (!r?.success) throw Object.assign(new Error(r?.error || 'no answer'), { code: r?.code || 'internal_error' });
  return r.data.sessions;
}

// startSession starts a new session at medium and makes it current. name
// '' lets the host choose the id; a name that is a session already is
// picked, not changed: starting a session never raises or lowers one.
export async function startSession(name = '') {
  if (name && (await listSessions()).some((s) => s.sessionId === name)) {
    await setCurrentSession(name);
    return name;
  }
  const r = await host('set-session', { sessionId: name, level: 'medium' });
  if (!r?.success) throw Object.assign(new Error(r?.error || 'no answer'), { code: r?.code || 'internal_error' });
  await setCurrentSession(r.data.sessionId);
  return r.data.sessionId;
}
