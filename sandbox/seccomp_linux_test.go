package sandbox

import (
	"slices"
	"testing"
)

// TestTheFilterNamesWhatTheIssueForbids: a name that does not resolve
// on the running architecture would silently fall out of Blocked.
func TestTheFilterNamesWhatTheIssueForbids(t *testing.T) {
	p, info, err := FilterSyscalls()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"ptrace", "mount", "umount2", "unshare", "setns", "keyctl", "bpf", "io_uring_setup", "open_by_handle_at", "process_vm_writev"} {
		if _, ok := info.SyscallNames[n]; !ok {
			t.Errorf("%s is unknown on %s", n, info.Name)
		}
		if !slices.Contains(p.Syscalls[0].Names, n) {
			t.Errorf("%s is not refused", n)
		}
	}
	b, err := filterProgram()
	if err != nil || len(b) == 0 || len(b)%8 != 0 {
		t.Fatalf("the program is %d bytes (%v)", len(b), err)
	}
}
