//go:build unix

package shell

import "syscall"

// openNoWait is added to an outside read's open flags: opening a named
// pipe for reading would otherwise wait for a writer, holding the call
// (and a host goroutine) past its deadline. The file is then refused as
// not regular; on a regular file the flag changes nothing.
const openNoWait = syscall.O_NONBLOCK
