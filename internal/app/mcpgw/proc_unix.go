//go:build unix

package mcpgw

import (
	"os/exec"
	"syscall"
)

// ownGroup starts the server in a process group of its own, so that
// stopping it stops what it started too (npx starts node, node may start
// more).
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(cmd *exec.Cmd) { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
