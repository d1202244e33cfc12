//go:build !unix

package workspace

import (
	"io/fs"
	"os"
)

// singleLink: hard links are not counted on this platform.
func singleLink(*os.File) error { return nil }

// openNoWait: no named pipes in the file system on this platform, and an
// open never waits for another end.
const openNoWait = 0

// dirID: no cheap identity of a directory here; a ledger is believed
// whatever directory it sits beside.
func dirID(fs.FileInfo) uint64 { return 0 }
