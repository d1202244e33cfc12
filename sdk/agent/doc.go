// Package agent is the guest side of the restricted API for agents written
// in Go and built with GOOS=wasip1 GOARCH=wasm: it wraps the imports that
// docs/abi.md describes. Only the functions an agent calls are imported,
// so an agent asks (at link time) for exactly what it uses.
package agent
