// The service worker only wires: modules do the work, this registers them.
import { onMessage, onConnect, onInstalled, onStartup } from './router.js';
import { onWindowRemoved } from './prompts.js';
import { restrictStorage, watchAudit } from './audit.js';
import { watchManagedPolicy } from './managed.js';

// First, before any page or content script can reach it: storage is for
// the extension's own contexts only.
restrictStorage();
watchAudit();
watchManagedPolicy();
chrome.runtime.onMessage.addListener(onMessage);
chrome.runtime.onConnect.addListener(onConnect);
chrome.runtime.onInstalled.addListener(onInstalled);
chrome.runtime.onStartup.addListener(onStartup);
chrome.windows.onRemoved.addListener(onWindowRemoved);
