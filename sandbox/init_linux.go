package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// The host's own executable is the sandbox's init (bound at initPath):
// any program that links this package, the host and its test binaries
// alike, turns into it when started under that name, before its main.
// It is the only program of the host that runs inside, as the sandbox's
// user and under its filter, and it holds no secret: it bridges the
// proxy and sets the limits.
func init() {
	if len(os.Args) > 0 {
		switch os.Args[0] {
		case initPath:
			os.Exit(runInit(os.Args[1:]))
		case limitsName:
			os.Exit(runLimited(os.Args[1:]))
		case stageName:
			os.Exit(runStage(os.Args[1:]))
		}
	}
}

// initArgs is the command bwrap starts: the init, the limits, the
// proxy's socket inside ("-" for none), then the program.
func initArgs(l Limits, sock string, argv []string) []string {
	if sock == "" {
		sock = "-"
	}
	cpu := int64((l.CPU + 999_999_999) / 1_000_000_000)
	a := []string{initPath, sock,
		strconv.FormatInt(cpu, 10), strconv.FormatInt(l.Memory, 10), strconv.Itoa(l.Processes),
		strconv.Itoa(l.OpenFiles), strconv.FormatInt(l.FileSize, 10), "--"}
	return append(a, argv...)
}

const limitsCount = 5

// runInit bridges ProxyAddr on the sandbox's loopback to the host's
// socket, when there is one, and runs the program under its limits (as
// limitsName, a second start of itself that sets them and execs it): the
// bridge itself runs without them. Its status is the program's: 128+N
// for signal N.
func runInit(args []string) int {
	if len(args) < 2+limitsCount || args[1+limitsCount] != "--" {
		fmt.Fprintln(os.Stderr, "nmhost sandbox: init started with the wrong arguments")
		return 127
	}
	if sock := args[0]; sock != "-" {
		ln, err := net.Listen("tcp", ProxyAddr)
		if err != nil {
			fmt.Fprintf(os.Stderr, "nmhost sandbox: the proxy's port: %v\n", err)
			return 127
		}
		go bridge(ln, sock)
	}
	cmd := exec.Cmd{Path: initPath, Args: append([]string{limitsName}, args[1:]...),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Env: os.Environ()}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintf(os.Stderr, "nmhost sandbox: %v\n", err)
	return 127
}

// bridge hands each connection to the proxy's Unix socket.
func bridge(ln net.Listener, sock string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", sock)
			if err != nil {
				return
			}
			defer u.Close()
			go func() { io.Copy(u, c); u.(*net.UnixConn).CloseWrite() }()
			io.Copy(c, u)
		}()
	}
}

// runLimited sets the limits, hard and soft, and execs the program. A
// process can lower its own hard limits but never raise them without
// CAP_SYS_RESOURCE on the host, which nothing in the sandbox has.
func runLimited(args []string) int {
	if len(args) < limitsCount+2 {
		fmt.Fprintln(os.Stderr, "nmhost sandbox: no program")
		return 127
	}
	var n [limitsCount]uint64
	for i := range n {
		v, err := strconv.ParseUint(args[i], 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "nmhost sandbox: a limit is not a number")
			return 127
		}
		n[i] = v
	}
	set := []struct {
		res int
		cur uint64
		max uint64
	}{
		// SIGXCPU at the soft limit, SIGKILL a second later.
		{unix.RLIMIT_CPU, n[0], n[0] + 1},
		{unix.RLIMIT_AS, n[1], n[1]},
		{unix.RLIMIT_NPROC, n[2], n[2]},
		{unix.RLIMIT_NOFILE, n[3], n[3]},
		{unix.RLIMIT_FSIZE, n[4], n[4]},
		{unix.RLIMIT_CORE, 0, 0},
	}
	for _, s := range set {
		if err := unix.Setrlimit(s.res, &unix.Rlimit{Cur: s.cur, Max: s.max}); err != nil {
			fmt.Fprintf(os.Stderr, "nmhost sandbox: setting a limit: %v\n", err)
			return 127
		}
	}
	argv := args[limitsCount+1:]
	p, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: command not found\n", argv[0])
		return 127
	}
	err = syscall.Exec(p, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "%s: %v\n", argv[0], err)
	return 126
}

// stageName is the host's executable started, as root, to stage a run:
// see runStage.
const stageName = "nmhost-sandbox-stage"

// runStage runs as root in a mount namespace of its own (the host
// started it so): it binds each source onto its place (pairs, up to
// "--"), becomes nobody (rootUID), and execs bwrap with the rest. The
// binds vanish with the namespace when the run ends.
func runStage(args []string) int {
	i := slices.Index(args, "--")
	if i < 0 || i%2 != 0 || i+1 >= len(args) {
		fmt.Fprintln(os.Stderr, "nmhost sandbox: stage started with the wrong arguments")
		return 127
	}
	for j := 0; j < i; j += 2 {
		if err := unix.Mount(args[j], args[j+1], "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			fmt.Fprintf(os.Stderr, "nmhost sandbox: binding %s: %v\n", args[j], err)
			return 127
		}
	}
	ppid := os.Getppid()
	if err := unix.Setgroups(nil); err != nil {
		fmt.Fprintf(os.Stderr, "nmhost sandbox: %v\n", err)
		return 127
	}
	if err := unix.Setresgid(rootUID, rootUID, rootUID); err != nil {
		fmt.Fprintf(os.Stderr, "nmhost sandbox: %v\n", err)
		return 127
	}
	if err := unix.Setresuid(rootUID, rootUID, rootUID); err != nil {
		fmt.Fprintf(os.Stderr, "nmhost sandbox: %v\n", err)
		return 127
	}
	// A change of user clears the parent-death signal: set it again, and
	// make sure the host did not die in between.
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil || os.Getppid() != ppid {
		return 127
	}
	err := syscall.Exec(args[i+1], args[i+1:], []string{})
	fmt.Fprintf(os.Stderr, "nmhost sandbox: bwrap: %v\n", err)
	return 127
}
