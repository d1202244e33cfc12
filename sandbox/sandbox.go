package sandbox

import (
	"io"
	"time"
)

// Limits bound one run. The zero value of a field takes its default
// (DefaultLimits); no field can mean "unlimited".
type Limits struct {
	// Wall is how long the run may take before every process of it is
	// killed.
	Wall time.Duration
	// CPU is RLIMIT_CPU of the program and each process it starts.
	CPU time.Duration
	// Memory is RLIMIT_AS, the address space of each process.
	Memory int64
	// Processes is RLIMIT_NPROC: the tasks (threads count) the sandbox's
	// user may have at once.
	Processes int
	// OpenFiles is RLIMIT_NOFILE.
	OpenFiles int
	// FileSize is RLIMIT_FSIZE, the largest file a process may write.
	FileSize int64
	// Output is how many bytes of the program's output (stdout and
	// stderr together) the host reads; one more and the run is killed.
	Output int
	// Tmp is the size of the sandbox's own /tmp (memory).
	Tmp int64
}

// DefaultLimits are the limits of a command of the session shell.
func DefaultLimits() Limits {
	return Limits{Wall: 2 * time.Minute, CPU: time.Minute, Memory: 2 << 30, Processes: 256, OpenFiles: 1024,
		FileSize: 256 << 20, Output: 1 << 20, Tmp: 64 << 20}
}

// withDefaults fills each zero field from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Wall <= 0 {
		l.Wall = d.Wall
	}
	if l.CPU <= 0 {
		l.CPU = d.CPU
	}
	if l.Memory <= 0 {
		l.Memory = d.Memory
	}
	if l.Processes <= 0 {
		l.Processes = d.Processes
	}
	if l.OpenFiles <= 0 {
		l.OpenFiles = d.OpenFiles
	}
	if l.FileSize <= 0 {
		l.FileSize = d.FileSize
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.Tmp <= 0 {
		l.Tmp = d.Tmp
	}
	return l
}

// Config is one run.
type Config struct {
	// Workspace is the host directory bound read-write at /workspace,
	// the only place the program can write.
	Workspace string
	// Dir is the working directory inside the workspace ("" or "." for
	// its top), a cleaned relative name.
	Dir string
	// Hide are host paths made invisible besides the person's credential
	// folders and browser profiles (HiddenPaths): the host's data
	// directory, its keys.
	Hide []string
	// Proxy is the host path of the Unix socket of this run's proxy
	// (Proxy.Serve); "" leaves the program without any network.
	Proxy string
	// Stdin is the program's standard input; nil is empty.
	Stdin  io.Reader
	Limits Limits
}

// Result is how a run ended.
type Result struct {
	// Exit is the program's exit status; 128+N when signal N ended it.
	Exit int
	// Output is what it printed on stdout and stderr, at most
	// Limits.Output bytes.
	Output []byte
	// OutputCut: it printed more than Limits.Output and was killed.
	OutputCut bool
	// TimedOut: it ran past Limits.Wall (or the context ended) and was
	// killed.
	TimedOut bool
}

// Where things are inside the sandbox.
const (
	WorkspacePath = "/workspace"
	// runDir holds what the host puts in: the init program and the
	// proxy's socket directory.
	runDir     = "/run/nmhost"
	initPath   = runDir + "/init"
	netDir     = runDir + "/net"
	proxySock  = netDir + "/proxy.sock"
	limitsName = "nmhost-sandbox-limits"
	// ProxyAddr is where the program finds the proxy: a TCP port on the
	// sandbox's own loopback, bridged by the init program to the
	// host's Unix socket.
	ProxyAddr = "127.0.0.1:3128"
)
