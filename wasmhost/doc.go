// Package wasmhost runs an agent's WebAssembly module with wazero, linking
// only the restricted API functions its grants allow and deciding every
// call through the mediator.
package wasmhost
