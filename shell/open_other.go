//go:build !unix

package shell

// openNoWait: no named pipes in the file system on this platform.
const openNoWait = 0
