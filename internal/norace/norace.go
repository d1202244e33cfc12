//go:build !race

package norace

// Enabled reports whether this binary was built with the race detector.
const Enabled = false
