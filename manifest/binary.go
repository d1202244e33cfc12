package manifest

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// BuildLine is how to put nmhost where it stays: the manifest names the
// binary by path, so it must not live anywhere that is cleaned up.
const BuildLine = "go build -o ~/.local/bin/nmhost ./cmd/nmhost"

// DefaultTempDirs lists the directories the system cleans up: the
// process's temporary directory and the usual system-wide ones. Install
// and Doctor refuse a binary under any of them when Options.TempDirs says
// so; the command line passes this list.
func DefaultTempDirs() []string {
	dirs := []string{os.TempDir()}
	switch runtime.GOOS {
	case "windows":
		for _, v := range []string{"TEMP", "TMP"} {
			if d := os.Getenv(v); d != "" {
				dirs = append(dirs, d)
			}
		}
	case "darwin":
		dirs = append(dirs, "/tmp", "/private/tmp", "/var/folders", "/private/var/folders")
	default:
		dirs = append(dirs, "/tmp", "/var/tmp")
	}
	return dirs
}

// binaryProblem says why the browser would soon find no host at p, or ""
// when p is a place a binary stays. A binary in Go's build cache (where
// `go run` and `go test` put theirs) is refused always: the cache is
// trimmed and `go run`'s own directory goes when it exits. One in a
// temporary directory is refused too, unless the manifest goes into a
// --user-data-dir profile: such a profile is made for a test run and is as
// short-lived as the binary built for it (the end-to-end tests do this).
func (r resolved) binaryProblem(p string) string {
	if inBuildCache(p, r.BuildCache) {
		return "is in Go's build cache (where go run and go test put binaries; it is trimmed and go run's directory is removed when it exits)"
	}
	if r.UserDataDir == "" {
		for _, d := range r.TempDirs {
			if d != "" && under(p, d) {
				return "is in the temporary directory " + d + ", which is cleaned up"
			}
		}
	}
	return ""
}

func inBuildCache(p, cache string) bool {
	// The default cache is .../go-build; go run builds in $TMPDIR/go-buildNNN.
	if slices.ContainsFunc(strings.Split(filepath.ToSlash(p), "/"), func(e string) bool { return strings.HasPrefix(e, "go-build") }) {
		return true
	}
	return cache != "" && under(p, cache)
}

// under reports whether p is dir or inside it, comparing the paths with
// symbolic links resolved where they exist (/tmp is /private/tmp on macOS).
func under(p, dir string) bool {
	clean := func(s string) string {
		if r, err := filepath.EvalSymlinks(s); err == nil {
			s = r
		}
		return filepath.Clean(s)
	}
	p, dir = clean(p), clean(dir)
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// InstallCommand is the full command that installs the manifest for browser
// with these options and ids, run by the binary in opts.BinaryPath (or by
// the build line first, when that binary cannot be installed): what a
// person copies to fix what Doctor found.
func InstallCommand(opts Options, browser string, ids []string) string {
	bin := opts.BinaryPath
	if bin == "" {
		bin = "nmhost"
	}
	if r, err := opts.resolve(); err == nil && opts.BinaryPath != "" && r.binaryProblem(opts.BinaryPath) != "" {
		return BuildLine + " && " + installLine("~/.local/bin/nmhost", opts, browser, ids)
	}
	return installLine(bin, opts, browser, ids)
}

func installLine(bin string, opts Options, browser string, ids []string) string {
	args := []string{shellQuote(bin), "install"}
	if len(ids) == 0 {
		ids = []string{"ID"}
	}
	for _, id := range ids {
		args = append(args, "--extension-id", shellQuote(id))
	}
	if browser != "" {
		args = append(args, "--browser", browser)
	}
	if opts.System {
		args = append(args, "--system")
	}
	if opts.UserDataDir != "" {
		args = append(args, "--user-data-dir", shellQuote(opts.UserDataDir))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters; "~/" stays unquoted so the shell expands it.
func shellQuote(s string) string {
	plain := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+@:~=", r)
	}
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool { return !plain(r) }) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// idsOf turns a manifest's listed callers back into extension ids, for an
// install command that keeps them.
func idsOf(m *Manifest) []string {
	var out []string
	for _, o := range m.AllowedOrigins {
		if id := strings.TrimSuffix(strings.TrimPrefix(o, "chrome-extension://"), "/"); ValidChromeID(id) {
			out = append(out, id)
		}
	}
	for _, id := range m.AllowedExtensions {
		if ValidFirefoxID(id) {
			out = append(out, id)
		}
	}
	return out
}
