// Package e2e drives a real Chromium with the real extension and the real
// host: the scenarios of the end-to-end tests live in its _test.go files.
package e2e
