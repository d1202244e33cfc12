// Package archcheck holds the project's layering rules as code: which of
// its packages may import which, checked against `go list` by its test so
// the build, not the reader, keeps them.
package archcheck
