//go:build unix

package adminpolicy

import (
	"fmt"
	"os"
	"syscall"
)

// adminOnly refuses a file or directory anyone but root could write.
func adminOnly(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: cannot read its owner", path)
	}
	switch {
	case st.Uid != 0:
		return fmt.Errorf("%s is owned by uid %d, not root: only an administrator may write the policy (chown root %s)", path, st.Uid, path)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others than root (mode %v): chmod go-w %s", path, fi.Mode().Perm(), path)
	}
	return nil
}
