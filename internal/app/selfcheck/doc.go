// Package selfcheck proves that an installed agent's rules fire: a
// built-in hostile corpus (URL spellings, redirects, names resolving to
// private addresses, other origins' pages, workspace escapes, each class
// of operation) run against a throwaway copy of the store, with loopback
// canaries only. `nmhost check AGENT` prints it; the options page's
// self-test asks the host for it (check-agent).
package selfcheck
