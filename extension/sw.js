// The service worker only wires: modules do the work, this registers them.
import { onMessage, onInstalled, onStartup } from './router.js';

chrome.runtime.onMessage.addListener(onMessage);
chrome.runtime.onInstalled.addListener(onInstalled);
chrome.runtime.onStartup.addListener(onStartup);
