package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// HostName is the name the extension passes to connectNative; it is also
// the manifest's file name (plus ".json") and its Windows registry key.
const HostName = "com.agentgate.nmhost"

// Description goes into every manifest nmhost writes. Uninstall recognises
// its own manifests by HostName plus this prefix, so it never deletes a
// file that some other tool placed under the same name.
const Description = "agentgate nmhost: permission-mediating native host for browser agents"

const ownPrefix = "agentgate nmhost"

// Manifest is a native-messaging host manifest. Chromium-family browsers
// read AllowedOrigins, Firefox reads AllowedExtensions.
type Manifest struct {
	Name              string   `json:"name"`
	Description       string   `json:"description"`
	Path              string   `json:"path"`
	Type              string   `json:"type"`
	AllowedOrigins    []string `json:"allowed_origins,omitempty"`
	AllowedExtensions []string `json:"allowed_extensions,omitempty"`
}

// Installed is one manifest Install wrote.
type Installed struct {
	Browser string
	Path    string // the manifest file
	// RegistryKey is the key set on Windows (under HKCU or HKLM); empty
	// elsewhere.
	RegistryKey string
}

// Check is one finding of Doctor.
type Check struct {
	Name   string
	OK     bool
	Detail string
}

var (
	// Chrome's rule: lowercase alphanumerics and underscores in
	// dot-separated parts, no leading, trailing or doubled dot.
	nameRE = lazyRegexp(`^[a-z0-9_]+(\.[a-z0-9_]+)*$`)
	// A Chrome extension ID is 32 letters a-p: a SHA-256 prefix of the
	// extension's key written in base 16 with the digits a-p.
	chromeIDRE = lazyRegexp(`^[a-p]{32}$`)
	// Firefox add-on IDs are email-like or a braced GUID (AMO's rules).
	geckoEmailRE = lazyRegexp(`^[A-Za-z0-9._+-]*@[A-Za-z0-9._-]+$`)
	geckoGUIDRE  = lazyRegexp(`^\{[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\}$`)
)

// ValidName reports whether name is a valid native-messaging host name.
func ValidName(name string) bool { return len(name) <= 255 && nameRE().MatchString(name) }

// ValidChromeID reports whether id is a Chrome extension ID.
func ValidChromeID(id string) bool { return chromeIDRE().MatchString(id) }

// ValidFirefoxID reports whether id is a Firefox add-on ID.
func ValidFirefoxID(id string) bool {
	if len(id) > 255 {
		return false
	}
	return geckoGUIDRE().MatchString(id) || (geckoEmailRE().MatchString(id) && !strings.Contains(id, ".."))
}

// AllowedOrigins returns the allowed_origins entries for Chrome extension
// IDs: chrome-extension://ID/. IDs that are not Chrome IDs are left out,
// so a hostile string can never become an origin.
func AllowedOrigins(extensionIDs []string) []string {
	var out []string
	for _, id := range extensionIDs {
		if o := "chrome-extension://" + id + "/"; ValidChromeID(id) && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

// splitIDs sorts ids into Chrome and Firefox IDs, refusing anything that is
// neither: an ID ends up inside a security boundary, so no guessing.
func splitIDs(ids []string) (chrome, firefox []string, err error) {
	for _, id := range ids {
		switch {
		case ValidChromeID(id):
			if !slices.Contains(chrome, id) {
				chrome = append(chrome, id)
			}
		case ValidFirefoxID(id):
			if !slices.Contains(firefox, id) {
				firefox = append(firefox, id)
			}
		default:
			return nil, nil, fmt.Errorf("manifest: extension-id[%.80q]: not a Chrome extension ID (32 letters a-p) nor a Firefox add-on ID (name@domain or {GUID})", id)
		}
	}
	return chrome, firefox, nil
}

// build returns browser b's manifest for binary and the given IDs, or nil
// when none of the IDs applies to b.
func build(b, binary string, chrome, firefox []string) *Manifest {
	m := &Manifest{Name: HostName, Description: Description, Path: binary, Type: "stdio"}
	if isChromium(b) {
		if len(chrome) == 0 {
			return nil
		}
		m.AllowedOrigins = AllowedOrigins(chrome)
	} else {
		if len(firefox) == 0 {
			return nil
		}
		m.AllowedExtensions = slices.Clone(firefox)
	}
	return m
}

// absFor reports whether p is absolute on goos (Windows paths cannot be
// judged by the host's filepath when testing across systems).
func absFor(goos, p string) bool {
	if goos == "windows" {
		return len(p) >= 3 && p[1] == ':' && (p[2] == '\\' || p[2] == '/') || strings.HasPrefix(p, `\\`)
	}
	return strings.HasPrefix(p, "/")
}

// executable checks p is a regular file the browser can run.
func executable(goos, p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", p)
	}
	if goos != "windows" && st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable (mode %v)", p, st.Mode().Perm())
	}
	return nil
}

// Install writes the manifest for each browser in opts and returns what it
// wrote. Each file is written atomically (temporary file, then rename)
// with mode 0644, so a browser never reads half a manifest.
func Install(opts Options) ([]Installed, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if r.GOOS == "windows" && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("manifest: os[windows]: the registry can only be written on Windows")
	}
	if !absFor(r.GOOS, r.BinaryPath) {
		return nil, fmt.Errorf("manifest: binary[%s]: path must be absolute (browsers on Linux and macOS refuse relative paths)", r.BinaryPath)
	}
	if err := executable(r.GOOS, r.BinaryPath); err != nil {
		return nil, fmt.Errorf("manifest: binary[%s]: %w", r.BinaryPath, err)
	}
	if why := r.binaryProblem(r.BinaryPath); why != "" {
		return nil, &TemporaryBinaryError{Path: r.BinaryPath, Why: why,
			Install: installLine("~/.local/bin/nmhost", opts, strings.Join(opts.Browsers, ","), opts.ExtensionIDs)}
	}
	if len(r.ExtensionIDs) == 0 {
		return nil, errors.New("manifest: no extension ID given; the manifest must name who may call the host")
	}
	chrome, firefox, err := splitIDs(r.ExtensionIDs)
	if err != nil {
		return nil, err
	}
	type plan struct {
		browser, path string
		m             *Manifest
	}
	var plans []plan
	for _, b := range r.browsers {
		m := build(b, r.BinaryPath, chrome, firefox)
		if m == nil {
			if r.explicit {
				kind := "Chrome extension ID"
				if !isChromium(b) {
					kind = "Firefox add-on ID"
				}
				return nil, fmt.Errorf("manifest: browser[%s]: no %s among the extension IDs", b, kind)
			}
			continue // "all": install where an ID applies
		}
		d, err := r.dir(b)
		if err != nil {
			return nil, err
		}
		p := filepath.Join(d, HostName+".json")
		// With a user-data-dir several Chromium browsers share one path.
		if slices.ContainsFunc(plans, func(x plan) bool { return x.path == p }) {
			continue
		}
		plans = append(plans, plan{b, p, m})
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("manifest: browsers%v: none matches the extension IDs given", r.browsers)
	}
	var done []Installed
	for _, p := range plans {
		data, err := json.MarshalIndent(p.m, "", "  ")
		if err != nil {
			return done, fmt.Errorf("manifest: browser[%s] manifest[%s]: %w", p.browser, p.path, err)
		}
		if err := writeAtomic(p.path, append(data, '\n')); err != nil {
			return done, fmt.Errorf("manifest: browser[%s] manifest[%s]: %w", p.browser, p.path, err)
		}
		in := Installed{Browser: p.browser, Path: p.path}
		if r.GOOS == "windows" {
			key, _ := RegistryKey(p.browser)
			if err := setRegistry(r.System, key, p.path); err != nil {
				return done, fmt.Errorf("manifest: browser[%s] registry[%s]: %w", p.browser, key, err)
			}
			in.RegistryKey = key
		}
		done = append(done, in)
	}
	return done, nil
}

// writeAtomic replaces path with data: a reader sees the old file or the
// new one, never a mix.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after a successful rename
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	// CreateTemp makes 0600; browsers (and other users, for a system
	// install) must be able to read the manifest.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readManifest parses the manifest at path.
func readManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON manifest: %w", err)
	}
	return &m, nil
}

// TemporaryBinaryError is Install's refusal of a binary that will not stay
// where the manifest would say it is.
type TemporaryBinaryError struct {
	Path    string
	Why     string
	Install string // the install command to run once built
}

func (e *TemporaryBinaryError) Error() string {
	return fmt.Sprintf("the binary %s %s, so the browser would soon find no host; build it somewhere it stays and install from there:\n  %s\n  %s",
		e.Path, e.Why, BuildLine, e.Install)
}

// ours reports whether m is a manifest nmhost wrote.
func ours(m *Manifest) bool {
	return m != nil && m.Name == HostName && strings.HasPrefix(m.Description, ownPrefix)
}

// ErrForeign is matched (errors.Is) by Uninstall's error when a file under
// the host's name was not written by nmhost and was left in place.
var ErrForeign = errors.New("foreign manifest left in place")

// Uninstall removes the manifests nmhost wrote for the browsers in opts
// and returns the paths it removed. Only regular files named HostName.json
// whose content is recognisably nmhost's are removed; anything else at that
// path is left alone and reported through an error matching ErrForeign.
// A missing manifest is not an error.
func Uninstall(opts Options) ([]string, error) {
	r, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if r.GOOS == "windows" && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("manifest: os[windows]: the registry can only be changed on Windows")
	}
	var removed []string
	var errs []error
	for _, b := range r.browsers {
		d, err := r.dir(b)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := filepath.Join(d, HostName+".json")
		if r.GOOS == "windows" {
			key, _ := RegistryKey(b)
			// Only a key that points at our file is ours to delete.
			if v, err := readRegistry(r.System, key); err == nil && strings.EqualFold(filepath.Clean(v), filepath.Clean(p)) {
				if err := deleteRegistry(r.System, key); err != nil {
					errs = append(errs, fmt.Errorf("manifest: browser[%s] registry[%s]: %w", b, key, err))
				}
			}
		}
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || slices.Contains(removed, p) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("manifest: browser[%s] manifest[%s]: %w", b, p, err))
			continue
		}
		if !st.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("manifest: browser[%s] manifest[%s]: %w: not a regular file", b, p, ErrForeign))
			continue
		}
		m, err := readManifest(p)
		if err != nil || !ours(m) {
			errs = append(errs, fmt.Errorf("manifest: browser[%s] manifest[%s]: %w: not written by nmhost", b, p, ErrForeign))
			continue
		}
		if err := os.Remove(p); err != nil {
			errs = append(errs, fmt.Errorf("manifest: browser[%s] manifest[%s]: %w", b, p, err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// lazyRegexp compiles expr on first use, not at package init: every
// command of the binary runs every package's init, and a host started for
// one message should not pay for patterns it never matches.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
