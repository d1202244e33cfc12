// Package flows runs workflows against the host's own parts: the store's
// agents and modules, the WebAssembly runtime, the mediated fetch and the
// browser, each task decided by the mediator before its layer runs.
package flows
