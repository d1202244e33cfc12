package adminpolicy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// File names the machine policy file in the operating system's
// admin location (Path).
const File = "policy.json"

// maxAdminPolicyBytes bounds the policy file: a few rules, not a database.
const maxAdminPolicyBytes = 1 << 20

// Path is where an administrator puts the machine's policy: a
// place only an administrator can write.
//
//	Linux (and other Unix)  /etc/nmhost/policy.json
//	macOS                   /Library/Application Support/nmhost/policy.json
//	Windows                 %ProgramData%\nmhost\policy.json
func Path() string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/nmhost/" + File
	case "windows":
		pd := os.Getenv("ProgramData")
		if pd == "" {
			pd = `C:\ProgramData`
		}
		return filepath.Join(pd, "nmhost", File)
	}
	return "/etc/nmhost/" + File
}

// Load reads the machine policy at path. No file is no policy.
// A file that anyone but an administrator could have written (a symbolic
// link, a file or directory writable by others than its owner, an owner
// who is not root) is refused, not ignored: the host does not run under
// rules a user may have forged or loosened. The file is read exactly
// (unknown, repeated or case-variant members refused) and every rule
// checked.
func Load(path string) (mediator.AdminPolicy, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return mediator.AdminPolicy{}, nil
	}
	if err != nil {
		return mediator.AdminPolicy{}, fmt.Errorf("admin policy %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return mediator.AdminPolicy{}, fmt.Errorf("admin policy %s is a symbolic link; an administrator's policy must be a file only an administrator can write (replace the link with the file)", path)
	}
	if !fi.Mode().IsRegular() {
		return mediator.AdminPolicy{}, fmt.Errorf("admin policy %s is not a regular file", path)
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		if err := adminOnly(p); err != nil {
			return mediator.AdminPolicy{}, fmt.Errorf("admin policy %s: %w", path, err)
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return mediator.AdminPolicy{}, fmt.Errorf("admin policy %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAdminPolicyBytes+1))
	if err != nil {
		return mediator.AdminPolicy{}, fmt.Errorf("admin policy %s: %w", path, err)
	}
	p, err := Parse(b, "admin file "+path)
	if err != nil {
		return mediator.AdminPolicy{}, fmt.Errorf("admin policy %s: %w", path, err)
	}
	return p, nil
}

// Parse reads a policy's JSON exactly and checks every rule;
// source says where it came from.
func Parse(b []byte, source string) (mediator.AdminPolicy, error) {
	if len(b) > maxAdminPolicyBytes {
		return mediator.AdminPolicy{}, mediator.Errorf(mediator.CodeTooLarge, "larger than %d bytes", maxAdminPolicyBytes)
	}
	// A policy is one JSON object. Decoding JSON null into a struct is
	// not an error (it leaves the zero value), so a file reading "null"
	// would be taken for a policy without rules: a broken file would lift
	// every rule instead of being refused like any other malformed one.
	if doc := bytes.TrimLeft(b, " \t\r\n"); len(doc) == 0 || doc[0] != '{' {
		return mediator.AdminPolicy{}, mediator.Errorf(mediator.CodeBadRequest,
			"not a policy: a policy file holds one JSON object (blockedPermissions, deniedHosts, maxSessionLevel and exportEndpoint), not null, an array or a string")
	}
	var p mediator.AdminPolicy
	if err := mediator.DecodeExact(b, &p); err != nil {
		return mediator.AdminPolicy{}, &mediator.Error{Code: mediator.CodeBadRequest,
			Msg: "not a policy: blockedPermissions, deniedHosts, maxSessionLevel and exportEndpoint, names matching exactly", Err: err}
	}
	if err := p.Check(); err != nil {
		return mediator.AdminPolicy{}, err
	}
	for _, h := range p.DeniedHosts {
		if strings.HasPrefix(h, "!") {
			return mediator.AdminPolicy{}, mediator.Errorf(mediator.CodeInvalidAllowedHost, "deniedHosts entry %q: write the pattern without '!': every entry here is a deny", mediator.Truncate(h, 64))
		}
		if _, err := netproxy.ParseEntry("!" + h); err != nil {
			return mediator.AdminPolicy{}, fmt.Errorf("deniedHosts: %w", err)
		}
	}
	p.Source = source
	return p, nil
}
