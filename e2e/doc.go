//go:build linux && e2e

// Package e2e drives a real Chromium with the real extension and the real
// host: the scenarios of the end-to-end tests live in its _test.go files.
// It runs on Linux only (Debian's Chromium, /proc for the host processes),
// and only when asked for (`go test -tags e2e ./e2e`, as scripts/test.sh
// does after installing Chromium and Pyodide), so every file carries the
// `linux && e2e` build constraint: plain `go test ./...` passes on any
// machine with Go.
package e2e
