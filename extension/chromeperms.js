// Chrome permissions the extension holds only once a person has granted
// an agent something that needs them. clipboardRead, clipboardWrite and
// notifications are optional_permissions in manifest.json: the extension
// is installed without them, and asks Chrome for one on the person's click
// that grants an agent the matching permission (chrome.permissions.request
// needs that click). A browser call that needs one Chrome has not given is
// refused, not attempted.

// The Chrome permission each agent permission needs, if any.
const NEEDS = Object.freeze({
  'clipboard.read': 'clipboardRead',
  'clipboard.write': 'clipboardWrite',
  notifications: 'notifications',
  'notifications.showNotification': 'notifications',
});

// chromePermissionFor names the Chrome permission that agent permission
// (or browser call) perm needs, or undefined.
export function chromePermissionFor(perm) {
  return Object.hasOwn(NEEDS, perm) ? NEEDS[perm] : undefined;
}

// hasChromePermission says whether Chrome gave the extension what perm
// needs (true when it needs nothing).
export async function hasChromePermission(perm) {
  const p = chromePermissionFor(perm);
  return !p || chrome.permissions.contains({ permissions: [p] });
}

// askChromePermission asks Chrome for what perm needs. Call it first
// thing in a click handler: Chrome shows its own prompt only during the
// person's gesture.
export function askChromePermission(perm) {
  const p = chromePermissionFor(perm);
  return p ? chrome.permissions.request({ permissions: [p] }) : Promise.resolve(true);
}
