package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// privateEntries are what the host trusts in the data dir: whoever can
// change one of them can change grants and admitted origins, read the
// viewer's token, or swap the code agents run. Each must be writable by
// its owner only. Entries that do not exist yet are fine.
var privateEntries = []string{
	ConfigFile, "nmhost.db", "nmhost.db-wal", "nmhost.db-shm",
	"memory.db", "memory.db-wal", "memory.db-shm",
	"viewer-token", "modules", "wasm-cache", "session-workspaces",
}

// UnsafeError is a data dir, or a file in it, that others may write.
type UnsafeError struct {
	Path string
	Mode fs.FileMode
	Dir  bool
}

func (e *UnsafeError) Error() string {
	who := "its group and other users"
	switch {
	case e.Mode&0o020 == 0:
		who = "other users"
	case e.Mode&0o002 == 0:
		who = "its group"
	}
	what := "file"
	if e.Dir {
		what = "directory"
	}
	return fmt.Sprintf("%s %s is writable by %s (mode %#o), who could then change grants, admitted origins or the viewer token; fix: %s",
		what, e.Path, who, e.Mode.Perm(), e.Fix())
}

// Fix is the command that makes the path private again.
func (e *UnsafeError) Fix() string {
	if e.Dir {
		return "chmod 700 " + e.Path
	}
	return "chmod 600 " + e.Path
}

// CheckPrivate returns an *UnsafeError when dir, or one of the files and
// directories the host keeps in it, is writable by group or others. The
// host, `serve`, `run` and every command that opens the store refuse such
// a data dir; `doctor` reports it with the same fix. Windows is not
// checked: its rights are ACLs, which a mode does not describe.
func CheckPrivate(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // Ensure creates it 0700
	}
	if err != nil {
		return fmt.Errorf("datadir[%s]: %w", dir, err)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return &UnsafeError{Path: dir, Mode: fi.Mode().Perm(), Dir: true}
	}
	for _, name := range privateEntries {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("datadir[%s]: %w", p, err)
		}
		if fi.Mode().Perm()&0o022 != 0 {
			return &UnsafeError{Path: p, Mode: fi.Mode().Perm(), Dir: fi.IsDir()}
		}
	}
	return nil
}

// PublishSecret creates path (in dir) holding text, owner-only, or fails
// with an error matching fs.ErrExist when it already exists. The text is
// written whole to a private temporary file and linked into place: the
// link is atomic and never replaces a file, so two processes creating the
// same secret at once end up with one, and neither reads the other's
// half-written file (the loser reads the winner's).
func PublishSecret(dir, path, text string) error {
	f, err := os.CreateTemp(dir, filepath.Base(path)+".new-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, werr := f.WriteString(text)
	cerr := f.Chmod(0o600) // CreateTemp's 0600 already; explicit against odd platforms
	serr := f.Sync()
	if err := errors.Join(werr, cerr, serr, f.Close()); err != nil {
		return err
	}
	return os.Link(f.Name(), path)
}
