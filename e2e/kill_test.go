//go:build linux && e2e

package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// killHosts sends SIGKILL to every running process of our nmhost binary
// (the ones Chromium started) and returns how many there were.
func killHosts(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != nmhostBin {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}
