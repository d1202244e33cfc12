// Command hostile is what the sandbox's tests run inside it: each
// subcommand tries one way out and prints "ok" or the error it met.
package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage: hostile what [args]")
		os.Exit(2)
	}
	arg := func(i int) string {
		if len(os.Args) > i {
			return os.Args[i]
		}
		return ""
	}
	var err error
	switch os.Args[1] {
	case "raw":
		_, err = syscallErr(syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP))
	case "packet":
		_, err = syscallErr(syscall.Socket(syscall.AF_PACKET, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, 0))
	case "ptrace":
		pid, _ := strconv.Atoi(arg(2))
		err = syscall.PtraceAttach(pid)
	case "unshare-user":
		err = syscall.Unshare(syscall.CLONE_NEWUSER)
	case "unshare-mount":
		err = syscall.Unshare(syscall.CLONE_NEWNS)
	case "clone-user":
		c := exec.Command("/bin/true")
		c.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
		err = c.Run()
	case "mount":
		err = syscall.Mount("none", arg(2), "tmpfs", 0, "")
	case "bind":
		err = syscall.Mount(arg(2), arg(3), "", syscall.MS_BIND, "")
	case "mknod":
		err = syscall.Mknod(arg(2), syscall.S_IFCHR|0o666, 1<<8|3) // /dev/null's numbers
	case "keyctl":
		_, _, e := syscall.Syscall(syscall.SYS_KEYCTL, 0, 0, 0)
		err = errno(e)
	case "bpf":
		_, _, e := syscall.Syscall(unix.SYS_BPF, 0, 0, 0)
		err = errno(e)
	case "dial":
		var c net.Conn
		c, err = net.Dial("tcp", arg(2))
		if c != nil {
			c.Close()
		}
	case "euid":
		fmt.Println(os.Geteuid())
		return
	case "link":
		err = os.Link(arg(2), arg(3))
	case "write":
		err = os.WriteFile(arg(2), []byte("written from the sandbox"), 0o666)
	case "read":
		var b []byte
		b, err = os.ReadFile(arg(2))
		if err == nil {
			fmt.Printf("read %q\n", b)
			return
		}
	default:
		fmt.Println("unknown", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func syscallErr(fd int, err error) (int, error) {
	if err == nil {
		syscall.Close(fd)
	}
	return fd, err
}

func errno(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}
