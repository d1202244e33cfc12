// Package agentfetch is the one path an agent's network fetch takes, from
// the extension's network-fetch message and from a WebAssembly module alike:
// grant, capability, allowedHosts, policy, then netproxy.
package agentfetch
