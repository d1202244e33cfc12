// The install sheet: before an agent is installed, and with it granted
// what its profile asks for, a person sees in plain words what it will be
// able to do, and confirms, as Chrome's own install dialog does. Every
// install from an extension page goes through it. Confirming also asks
// Chrome, in the same click, for the optional permissions those grants
// need (chromeperms.js): an agent is never granted a clipboard it cannot
// then reach.
import { chromePermissionFor } from './chromeperms.js';
import { el } from './host.js';

// What each permission lets an agent do, said the way a person would.
const WORDS = Object.freeze({
  'console.log': 'Print lines to its output',
  'page.read': 'Read the text of the page you run it on',
  'page.write': 'Change what the page you run it on shows',
  'clipboard.read': 'Read what you copied to the clipboard',
  'clipboard.write': 'Replace what is on your clipboard',
  'network.fetch': 'Fetch from the internet',
  notifications: 'Show you notifications',
  memory: 'Remember notes between its runs',
  shell: 'Run commands on your computer, in its session\'s workspace folder',
  'workspace.read': 'Read files in its session\'s workspace folder',
  'workspace.write': 'Create and change files in its session\'s workspace folder',
});

// plainWords says what permission perm lets the agent with profile p do.
export function plainWords(perm, p = {}) {
  const base = Object.hasOwn(WORDS, perm) ? WORDS[perm] : `Use ${perm}`;
  if (perm === 'network.fetch') {
    const hosts = p.capabilities?.allowedHosts || [];
    return hosts.length ? `${base}, only from ${hosts.join(', ')}` : `${base} (no site is allowed yet)`;
  }
  return base;
}

// asks is every permission the profile asks for, required ones first.
export function asks(p) {
  return [...new Set([...(p.permissions?.required || []), ...(p.permissions?.optional || [])])];
}

// chips is the permission chips of profile p: one short label each, its
// plain words as the chip's title.
export function chips(p) {
  const box = el('span', null, { class: 'chips' });
  for (const perm of asks(p)) box.append(el('span', perm, { class: 'chip', title: plainWords(perm, p) }));
  return box;
}

// installSheet shows the sheet for profile p and resolves with what the
// person chose: {installed: true, chromeRefused: [...]} once install (the
// caller's function, given the profile) succeeded; {installed: false}
// when they cancelled. The sheet is a modal <dialog>: Cancel has the
// focus, so an Enter typed as it opens installs nothing.
export function installSheet(p, install) {
  const dialog = document.getElementById('install-sheet') || document.body.appendChild(el('dialog', null, { id: 'install-sheet', 'aria-labelledby': 'sheet-title' }));
  const name = p.name || p.agentId;
  const list = el('ul', null, { class: 'sheet-asks' });
  for (const perm of asks(p)) list.append(el('li', plainWords(perm, p), { 'data-permission': perm }));
  if (!list.children.length) list.append(el('li', 'Nothing: it only computes on the input you give it'));
  const needs = [...new Set(asks(p).map(chromePermissionFor).filter(Boolean))];
  const cancel = el('button', 'Cancel', { id: 'sheet-cancel', type: 'button', autofocus: '' });
  const ok = el('button', `Install ${name}`, { id: 'sheet-install', type: 'button', class: 'primary' });
  const problem = el('p', null, { id: 'sheet-problem', class: 'warning', role: 'alert', hidden: '' });
  dialog.replaceChildren(
    el('h2', `Install “${name}”?`, { id: 'sheet-title' }),
    el('p', p.description || 'This agent has no description.', { class: 'muted' }),
    el('p', 'It will be able to:'),
    list,
    ...(needs.length ? [el('p', `Chrome will also ask you to let this extension use: ${needs.join(', ')}.`, { class: 'small' })] : []),
    el('p', 'You can take any of these back later on this page. Actions that change things can still ask you first.', { class: 'small muted' }),
    problem,
    el('div', null, { class: 'sheet-buttons' }),
  );
  dialog.lastChild.append(cancel, ok);
  return new Promise((resolve) => {
    cancel.addEventListener('click', () => {
      dialog.close();
      resolve({ installed: false });
    });
    dialog.addEventListener('cancel', () => resolve({ installed: false }), { once: true });
    ok.addEventListener('click', async () => {
      // Chrome's prompt first, while this click still counts as the
      // person's gesture; the install stands if Chrome says no (those
      // calls are then refused, named, and this page offers to ask again).
      let given = true;
      if (needs.length) given = await chrome.permissions.request({ permissions: needs }).catch(() => false);
      ok.disabled = true;
      const r = await install(p);
      if (!r?.success) {
        ok.disabled = false;
        problem.hidden = false;
        problem.textContent = `Not installed: ${r?.error || 'the host did not answer'} [${r?.code || 'unknown'}]`;
        return;
      }
      dialog.close();
      resolve({ installed: true, chromeRefused: given ? [] : needs });
    });
    dialog.showModal();
    cancel.focus();
  });
}
