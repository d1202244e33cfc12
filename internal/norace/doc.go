// Package norace runs one test of a race-built test binary again in a copy
// built without the race detector, for tests whose cost is the detector on
// work with nothing concurrent to check (RATIONALE.md, "Why does the
// peak-memory test run without the race detector?").
package norace
