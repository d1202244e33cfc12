package manifest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Doctor checks the manifests for the browsers in opts: present and
// parseable, name matching the file name, type stdio, each given extension
// ID admitted, and path an absolute, executable regular file. With "all",
// browsers without a manifest are reported as skipped, and only a machine
// with none at all fails. The data directory is the caller's to check,
// with CheckWritableDir.
func Doctor(opts Options) []Check {
	r, err := opts.resolve()
	if err != nil {
		return []Check{{Name: "options", Detail: err.Error()}}
	}
	chrome, firefox, idErr := splitIDs(r.ExtensionIDs)
	if idErr != nil {
		return []Check{{Name: "extension ids", Detail: idErr.Error()}}
	}
	var checks []Check
	found := 0
	for _, b := range r.browsers {
		d, err := r.dir(b)
		if err != nil {
			checks = append(checks, Check{Name: "browser[" + b + "]", Detail: err.Error()})
			continue
		}
		p := filepath.Join(d, HostName+".json")
		m, err := readManifest(p)
		present := Check{Name: fmt.Sprintf("browser[%s] manifest", b), OK: err == nil, Detail: p}
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && !r.explicit {
				present.OK, present.Detail = true, p+": not installed (skipped)"
				checks = append(checks, present)
				continue
			}
			present.Detail = fmt.Sprintf("%s: %v; install it: %s", p, err, InstallCommand(opts, b, r.ExtensionIDs))
			checks = append(checks, present)
			continue
		}
		found++
		checks = append(checks, present)
		checks = append(checks, doctorManifest(opts, r, b, p, m, chrome, firefox)...)
	}
	if !r.explicit && found == 0 {
		checks = append(checks, Check{Name: "manifests", Detail: "no browser has an nmhost manifest; install one: " + InstallCommand(opts, "", r.ExtensionIDs)})
	}
	return checks
}

func doctorManifest(opts Options, r resolved, b, p string, m *Manifest, chrome, firefox []string) []Check {
	pre := fmt.Sprintf("browser[%s] ", b)
	var out []Check

	want := strings.TrimSuffix(filepath.Base(p), ".json")
	c := Check{Name: pre + "name", OK: m.Name == want && ValidName(m.Name), Detail: fmt.Sprintf("%q", m.Name)}
	if !c.OK {
		c.Detail = fmt.Sprintf("name %q does not match the file name %q; the browser will not find the host", m.Name, want)
	}
	out = append(out, c)

	c = Check{Name: pre + "type", OK: m.Type == "stdio", Detail: fmt.Sprintf("%q", m.Type)}
	if !c.OK {
		c.Detail = fmt.Sprintf("type %q, want \"stdio\"", m.Type)
	}
	out = append(out, c)

	listed, field, ids := m.AllowedOrigins, "allowed_origins", AllowedOrigins(chrome)
	if !isChromium(b) {
		listed, field, ids = m.AllowedExtensions, "allowed_extensions", firefox
	}
	c = Check{Name: pre + "origin", OK: len(listed) > 0, Detail: field + ": " + strings.Join(listed, ", ")}
	if len(listed) == 0 {
		c.Detail = field + " is empty: no extension may call the host"
	}
	// The fix keeps every caller the manifest lists and adds the missing.
	keep := idsOf(m)
	for _, want := range r.ExtensionIDs {
		if !slices.Contains(keep, want) && (isChromium(b) == ValidChromeID(want)) {
			keep = append(keep, want)
		}
	}
	for _, want := range ids {
		if !slices.Contains(listed, want) {
			c.OK, c.Detail = false, fmt.Sprintf("%s does not list %s; run: %s", field, want, InstallCommand(opts, b, keep))
			break
		}
	}
	out = append(out, c)

	c = Check{Name: pre + "path", OK: true, Detail: m.Path}
	if len(keep) == 0 {
		keep = r.ExtensionIDs
	}
	switch {
	case !absFor(r.GOOS, m.Path):
		c.OK, c.Detail = false, fmt.Sprintf("path %q is not absolute; the browser will refuse it; install again: %s", m.Path, InstallCommand(opts, b, keep))
	case r.binaryProblem(m.Path) != "":
		// Checked before existence: `go run`'s binary is usually gone by now.
		c.OK, c.Detail = false, fmt.Sprintf("path %s %s, so the browser will soon find no host; build it where it stays and install from there: %s && %s",
			m.Path, r.binaryProblem(m.Path), BuildLine, installLine("~/.local/bin/nmhost", opts, b, keep))
	default:
		if err := executable(r.GOOS, m.Path); errors.Is(err, fs.ErrNotExist) {
			c.OK, c.Detail = false, fmt.Sprintf("path %s does not exist (was the binary moved?); install again from where it is now: %s", m.Path, InstallCommand(opts, b, keep))
		} else if err != nil {
			c.OK, c.Detail = false, fmt.Sprintf("path %q cannot be run: %v; install again: %s", m.Path, err, InstallCommand(opts, b, keep))
		} else if r.BinaryPath != "" && filepath.Clean(r.BinaryPath) != filepath.Clean(m.Path) {
			c.Detail = fmt.Sprintf("%s (not this binary, %s; to use this one: %s)", m.Path, r.BinaryPath, InstallCommand(opts, b, keep))
		}
	}
	out = append(out, c)

	if r.GOOS == "windows" {
		key, _ := RegistryKey(b)
		c = Check{Name: pre + "registry", Detail: key}
		v, err := readRegistry(r.System, key)
		switch {
		case err != nil:
			c.Detail = fmt.Sprintf("%s: %v", key, err)
		case !strings.EqualFold(filepath.Clean(v), filepath.Clean(p)):
			c.Detail = fmt.Sprintf("%s points at %q, not %q", key, v, p)
		default:
			c.OK = true
		}
		out = append(out, c)
	}
	return out
}

// CheckWritableDir checks that dir exists (or can be created) and that a
// file can be created in it, as the host must for its store and logs.
func CheckWritableDir(dir string) Check {
	c := Check{Name: "data dir " + dir}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		c.Detail = err.Error()
		return c
	}
	f, err := os.CreateTemp(dir, ".nmhost-doctor-*")
	if err != nil {
		c.Detail = fmt.Sprintf("not writable: %v", err)
		return c
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		c.Detail = fmt.Sprintf("cannot remove %s: %v", name, err)
		return c
	}
	c.OK, c.Detail = true, "writable"
	return c
}
