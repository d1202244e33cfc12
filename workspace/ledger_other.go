//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package workspace

import "os"

// lockFile: no file lock this package trusts on this platform (Solaris'
// flock emulation, plan9, wasm). The ledger is then shared by the
// Workspace values of one process only (its mutex), and two host
// processes using one workspace at once could each pass the quota's
// check; docs/permissions.md says so. The host ships for Linux, macOS and
// Windows, which all lock.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) error { return nil }

// crossProcess: nothing excludes other processes here.
const crossProcess = false
