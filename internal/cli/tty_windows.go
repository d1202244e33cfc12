package cli

import "golang.org/x/sys/windows"

// isTTY reports whether fd is a console.
func isTTY(fd uintptr) bool {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(fd), &mode) == nil
}
