// Package netproxy performs HTTP fetches for untrusted agents, reaching only
// the hosts and addresses an agent's allowedHosts ACL permits, whatever the
// URL, its redirects or DNS say.
//
// The work is split so that each step can be tested on its own:
//
//   - ParseEntry / NewACL turn allowedHosts entries into a normalised ACL,
//     refusing entries that are not written canonically (so that what a
//     person reads in a profile is exactly what is enforced);
//   - (*ACL).Check parses one untrusted URL, canonicalises its host and
//     matches it, without touching the network;
//   - ClassifyAddr sorts an address by the IANA special-purpose registries;
//   - Fetcher dials only addresses that were resolved and checked by itself,
//     and re-checks every redirect hop as if it were a new URL.
package netproxy
