// Runs an agent on the active tab (or the tab in ?tab=ID, when the popup is
// opened as a page) and shows its output and denials as they stream in.
import { host, el } from './host.js';
import { runPython } from './pyrun.js';

const $ = (id) => document.getElementById(id);

async function targetTab() {
  const fromQuery = Number(new URLSearchParams(location.search).get('tab'));
  if (Number.isInteger(fromQuery) && fromQuery > 0) return chrome.tabs.get(fromQuery);
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab;
}

async function init() {
  const r = await host('list-agents');
  const agents = r.success ? r.data.agents : [];
  $('agent').replaceChildren(...agents.filter((a) => a.moduleSha256).map((a) => el('option', a.profile.agentId,
    { value: a.profile.agentId, 'data-runtime': a.profile.runtime || 'wasm' })));
  const tab = await targetTab();
  // The title and URL are visible only for the tab the action was clicked
  // on (activeTab; the extension does not ask for "tabs").
  $('tab').textContent = tab ? `tab: ${tab.title || tab.url || 'the current tab'}` : 'no tab';
}

$('run').addEventListener('click', async () => {
  const tab = await targetTab();
  const out = $('output');
  const denials = $('run-denials');
  out.textContent = '';
  denials.replaceChildren();
  delete out.dataset.status;
  const showDenial = (d) => denials.append(el('li', `${d.permission}: ${d.code}: ${d.context?.reason || ''}`, { 'data-code': d.code }));
  if ($('agent').selectedOptions[0]?.dataset.runtime === 'python') {
    // Python runs here, in a sandbox frame; the host decides every call.
    const r = await runPython({ agentId: $('agent').value, input: $('input').value, tabId: tab?.id,
      onOutput: (text) => { out.textContent += text; }, onDenial: showDenial });
    out.textContent = r.output;
    if (r.code) out.textContent += `\n[${r.code}] ${r.error || ''}`;
    out.dataset.timings = JSON.stringify(r.timings);
    out.dataset.status = r.status;
    return;
  }
  // The service worker binds the run to the document this tab holds now
  // and takes the origin from that document, not from tab.url.
  const r = await host('run-agent', { agentId: $('agent').value, input: $('input').value, tabId: tab?.id }, (ev) => {
    if (ev.event === 'output') out.textContent += ev.data.text;
    if (ev.event === 'denial') denials.append(el('li', `${ev.data.permission}: ${ev.data.code}: ${ev.data.context?.reason || ''}`, { 'data-code': ev.data.code }));
  });
  if (r.success) {
    // The reply holds the whole output; streamed pieces may still be in flight.
    out.textContent = r.data.output;
    out.dataset.status = r.data.status;
    if (r.data.code) out.textContent += `\n[${r.data.code}] ${r.data.error}`;
  } else {
    out.dataset.status = r.code;
    out.textContent += `\n[${r.code}] ${r.error}`;
  }
});
init();
