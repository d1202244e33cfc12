package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// nsInit is the sandbox's init, PID 1 of its PID namespace, held by a
// pidfd from the moment bwrap reports it: a signal through the pidfd
// reaches that process and no other, and the pidfd says when it has
// exited. The kernel kills every other process of the namespace when
// the init dies, and reaps them before the init's own exit completes:
// once the pidfd reports the exit, nothing of the run is left.
type nsInit struct {
	mu sync.Mutex
	fd int // -1 until open
}

// open takes hold of pid, bwrap's "child-pid", if it is the init of a
// PID namespace of its own (its NSpid ends in 1), as it must be.
func (n *nsInit) open(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil || !isNSInit(st) {
		unix.Close(fd)
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd > 0 {
		unix.Close(n.fd)
	}
	n.fd = fd
}

// isNSInit reports whether a /proc/PID/status is a PID namespace's init.
func isNSInit(status []byte) bool {
	for _, l := range bytes.Split(status, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(l, []byte("NSpid:")); ok {
			f := bytes.Fields(rest)
			return len(f) >= 2 && string(f[len(f)-1]) == "1"
		}
	}
	return false
}

func (n *nsInit) get() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.fd
}

// kill ends a run: SIGKILL to the init, or to bwrap while bwrap has not
// reported it yet (nothing of the program runs then).
func (n *nsInit) kill(bwrap *os.Process) {
	if fd := n.get(); fd > 0 && unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil {
		return
	}
	_ = bwrap.Kill()
}

// end kills the init, if it is still there, and waits until it has
// exited (10 s at most: a process stuck in the kernel).
func (n *nsInit) end() {
	fd := n.get()
	if fd <= 0 {
		return
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if k, err := unix.Poll(p, 1000); k > 0 || err != nil && err != unix.EINTR {
			return
		}
	}
}

func (n *nsInit) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fd > 0 {
		unix.Close(n.fd)
		n.fd = -1
	}
}
