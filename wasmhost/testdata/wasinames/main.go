// Command wasinames is the test agent for names a guest gives WASI: each
// input line is one call, and it prints what happened. "open" and
// "create" go through Go's os package, whose own WASI layer cleans a name
// against its directories first; the "at-" commands call WASI directly
// with the name as given, relative to the /workspace descriptor, as a
// guest in another language (or one making the calls itself) does. A name
// written in double quotes is read as a Go string literal, so a line can
// carry a NUL or a control character; "repeat N LINE" is LINE N times.
package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/agentgate/nmhost/sdk/agent"
)

//go:wasmimport wasi_snapshot_preview1 path_create_directory
func pathCreateDirectory(fd int32, name unsafe.Pointer, n uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_remove_directory
func pathRemoveDirectory(fd int32, name unsafe.Pointer, n uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_unlink_file
func pathUnlinkFile(fd int32, name unsafe.Pointer, n uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_rename
func pathRename(fd int32, from unsafe.Pointer, fromN uint32, toFd int32, to unsafe.Pointer, toN uint32) uint32

//go:wasmimport wasi_snapshot_preview1 path_filestat_get
func pathFilestatGet(fd int32, flags uint32, name unsafe.Pointer, n uint32, out unsafe.Pointer) uint32

func main() {
	ws := workspaceFd()
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(string(agent.Input())), "\n") {
		// "repeat N LINE" is LINE N times.
		if r, ok := strings.CutPrefix(line, "repeat "); ok {
			count, rest, _ := strings.Cut(r, " ")
			n, _ := strconv.Atoi(count)
			for range n {
				lines = append(lines, rest)
			}
			continue
		}
		lines = append(lines, line)
	}
	for _, line := range lines {
		cmd, rest, _ := strings.Cut(line, " ")
		args := names(rest)
		arg := func(i int) string {
			if i < len(args) {
				return args[i]
			}
			return ""
		}
		var err error
		switch cmd {
		case "open":
			_, err = os.ReadFile(arg(0))
		case "create":
			err = os.WriteFile(arg(0), []byte(arg(1)), 0o600)
		case "at-open":
			err = openAt(ws, arg(0), syscall.O_RDONLY)
		case "at-create":
			err = openAt(ws, arg(0), syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC)
		case "at-mkdir":
			err = errno(call1(pathCreateDirectory, ws, arg(0)))
		case "at-rmdir":
			err = errno(call1(pathRemoveDirectory, ws, arg(0)))
		case "at-unlink":
			err = errno(call1(pathUnlinkFile, ws, arg(0)))
		case "at-stat":
			var st [64]byte
			b := []byte(arg(0) + "\x00")
			err = errno(pathFilestatGet(ws, 0, unsafe.Pointer(&b[0]), uint32(len(b)-1), unsafe.Pointer(&st[0])))
		case "at-rename":
			from, to := []byte(arg(0)+"\x00"), []byte(arg(1)+"\x00")
			err = errno(pathRename(ws, unsafe.Pointer(&from[0]), uint32(len(from)-1), ws, unsafe.Pointer(&to[0]), uint32(len(to)-1)))
		default:
			err = fmt.Errorf("unknown command")
		}
		if err != nil {
			fmt.Printf("%s %q: error %v\n", cmd, args, err)
			continue
		}
		fmt.Printf("%s %q: ok\n", cmd, args)
	}
}

// names splits a line's arguments at spaces; an argument in double quotes
// is a Go string literal.
func names(rest string) []string {
	var out []string
	for _, f := range strings.Fields(rest) {
		if strings.HasPrefix(f, `"`) {
			if s, err := strconv.Unquote(f); err == nil {
				f = s
			}
		}
		out = append(out, f)
	}
	return out
}

func call1(fn func(int32, unsafe.Pointer, uint32) uint32, fd int32, name string) uint32 {
	b := []byte(name + "\x00")
	return fn(fd, unsafe.Pointer(&b[0]), uint32(len(b)-1))
}

func openAt(dir int32, name string, mode int) error {
	fd, err := syscall.Openat(int(dir), name, mode, 0o600)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	if mode&syscall.O_WRONLY != 0 {
		_, err = syscall.Write(fd, []byte("owned"))
	}
	return err
}

func errno(e uint32) error {
	if e == 0 {
		return nil
	}
	return syscall.Errno(e)
}

// workspaceFd is the descriptor of the /workspace preopen: the first one,
// after stdin, stdout and stderr. (A descriptor from os.Open("/workspace")
// would not do: wazero names a directory opened as "." by "", and joins
// the names given relative to it as "/name".)
func workspaceFd() int32 { return 3 }
