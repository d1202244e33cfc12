//go:build !race

package wasmhost

const raceEnabled = false
