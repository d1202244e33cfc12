//go:build linux

// Package e2e drives a real Chromium with the real extension and the real
// host: the scenarios of the end-to-end tests live in its _test.go files.
// It runs on Linux only (Debian's Chromium, /proc for the host processes),
// so every file carries the linux build constraint.
package e2e
