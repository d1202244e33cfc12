package testkit

import "testing"

// NsPerOp is the time one iteration of the benchmark b just ran took,
// the unit every ratio to a baseline is taken in.
func NsPerOp(b *testing.B) float64 {
	if b.N == 0 {
		return 0
	}
	return float64(b.Elapsed().Nanoseconds()) / float64(b.N)
}
