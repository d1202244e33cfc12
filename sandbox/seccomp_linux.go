package sandbox

import (
	"encoding/binary"
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Blocked are the system calls the sandbox's filter refuses with EPERM,
// whatever their arguments: a program of the system has no business
// with them, and each is a way out of, or around, the sandbox: another
// process's memory (ptrace, process_vm_*), the mount table (mount and
// the new mount API), namespaces (unshare, setns), the kernel's keyring,
// BPF and perf, modules and kexec, io_uring (its operations do not pass
// through seccomp), userfaultfd (widens kernel races), file handles
// (open_by_handle_at walks past a bind mount), and the machine's state
// (reboot, swap, clock, acct, quotas). A name the running architecture
// does not have is left out (FilterSyscalls).
var Blocked = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
	"mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
	"unshare", "setns",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"userfaultfd", "open_by_handle_at", "name_to_handle_at",
	"reboot", "swapon", "swapoff", "syslog", "acct", "quotactl", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
	"iopl", "ioperm", "modify_ldt", "uselib", "lookup_dcookie", "personality", "vhangup", "nfsservctl",
}

// namespaceFlags are clone's flags that make a namespace: clone with any
// of them is refused as unshare is.
var namespaceFlags = []uint64{unix.CLONE_NEWNS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWUTS, unix.CLONE_NEWIPC,
	unix.CLONE_NEWUSER, unix.CLONE_NEWPID, unix.CLONE_NEWNET, unix.CLONE_NEWTIME}

// sockRaw matches SOCK_RAW (3) in socket's type argument, whatever
// flags (SOCK_NONBLOCK, SOCK_CLOEXEC) ride along: the type is the low
// four bits, and the library's BitsSet means "any of these bits", so the
// type is checked as bit 0 set, bit 1 set, bits 2 and 3 clear.
var sockRaw = seccomp.ArgumentConditions{
	{Argument: 1, Operation: seccomp.BitsSet, Value: 1},
	{Argument: 1, Operation: seccomp.BitsSet, Value: 2},
	{Argument: 1, Operation: seccomp.BitsNotSet, Value: 0xc},
}

// FilterSyscalls is the filter's policy for the running architecture:
// Blocked and clone with a namespace flag refused with EPERM; socket of
// the AF_PACKET family, or of type SOCK_RAW, refused with EPERM; clone3
// refused with ENOSYS, since its flags are behind a pointer the filter
// cannot read (the C library then falls back to clone, which it can);
// everything else allowed.
func FilterSyscalls() (seccomp.Policy, *arch.Info, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, nil, err
	}
	var names []string
	for _, n := range Blocked {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	var withArgs []seccomp.NameWithConditions
	for _, f := range namespaceFlags {
		withArgs = append(withArgs, seccomp.NameWithConditions{Name: "clone",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: f}}})
	}
	withArgs = append(withArgs,
		seccomp.NameWithConditions{Name: "socket", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: unix.AF_PACKET}}},
		seccomp.NameWithConditions{Name: "socket", Conditions: sockRaw},
	)
	p := seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: []seccomp.SyscallGroup{
		{Names: names, Action: seccomp.ActionErrno},
		{NamesWithCondtions: withArgs, Action: seccomp.ActionErrno},
		{Names: []string{"clone3"}, Action: seccomp.ActionErrno | seccomp.Action(unix.ENOSYS)},
	}}
	return p, info, nil
}

// filterProgram is the filter as bwrap reads it (--seccomp FD): struct
// sock_filter records in the machine's byte order. It starts with a
// check of its own that kills a process calling in another
// architecture's convention (int 0x80 on x86-64): the library's program
// allows those, and a blocklist that another calling convention walks
// around is no blocklist.
func filterProgram() ([]byte, error) {
	p, info, err := FilterSyscalls()
	if err != nil {
		return nil, err
	}
	body, err := p.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	prog := append([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}, body...)
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp filter: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		out = binary.NativeEndian.AppendUint16(out, r.Op)
		out = append(out, r.Jt, r.Jf)
		out = binary.NativeEndian.AppendUint32(out, r.K)
	}
	return out, nil
}
