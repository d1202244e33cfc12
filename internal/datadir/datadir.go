// Package datadir finds the directory that holds every file of the host and
// the host's own configuration inside it.
package datadir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
)

// EnvVar names the environment variable that overrides the data directory.
const EnvVar = "NMHOST_DATA_DIR"

// Resolve returns the data directory: $NMHOST_DATA_DIR when set, otherwise
// the OS's per-user data directory plus "nmhost". The result is absolute.
func Resolve(getenv func(string) string) (string, error) {
	if d := getenv(EnvVar); d != "" {
		return filepath.Abs(d)
	}
	var base string
	switch runtime.GOOS {
	case "windows":
		base = getenv("LocalAppData")
	case "darwin":
		if h, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(h, "Library", "Application Support")
		}
	default:
		base = getenv("XDG_DATA_HOME")
		if base == "" {
			if h, err := os.UserHomeDir(); err == nil {
				base = filepath.Join(h, ".local", "share")
			}
		}
	}
	if base == "" {
		return "", fmt.Errorf("datadir: no home directory; set %s", EnvVar)
	}
	return filepath.Abs(filepath.Join(base, "nmhost"))
}

// Ensure creates dir with owner-only rights when it does not exist.
func Ensure(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("datadir[%s]: %w", dir, err)
	}
	return nil
}

// Config is the host's own configuration, data-dir/config.json. Only the
// user (through `nmhost install` or by editing the file) writes it; nothing
// that arrives over native messaging can change it. The zero value admits no
// caller and uses no proxy.
type Config struct {
	// AllowedOrigins are the callers admitted in host mode: Chrome origins
	// ("chrome-extension://ID/") and Firefox add-on ids. Empty admits none.
	AllowedOrigins []string `json:"allowedOrigins"`
	// UnsafeProxyURL sends agent fetches through this proxy. Empty (the
	// default) means direct connections; the environment's proxy variables
	// are never used. Unsafe because the proxy, not the host, then resolves
	// names, so the address checks no longer see where a request goes.
	UnsafeProxyURL string `json:"unsafeProxyURL,omitempty"`
	// MaxResponseBytes caps a fetched body; 0 means netproxy's default (32 MiB).
	MaxResponseBytes int64 `json:"maxResponseBytes,omitempty"`
	// MaxGuestMemory bounds the sum of the maxMemory of the agent runs one
	// host process holds at once; 0 means wasmhost's default (2 GiB). A run
	// that finds no room waits, then fails with memory_busy.
	MaxGuestMemory int64 `json:"maxGuestMemory,omitempty"`
	// StaticHosts answers these names with these addresses before DNS, like
	// a hosts file (the demo and tests use it; no traffic leaves the machine).
	// The answers still pass every address check, so a name mapped to a
	// private address is refused like one that DNS maps there.
	StaticHosts map[string][]string `json:"staticHosts,omitempty"`
	// Workflow holds the workflow settings (docs/permissions.md,
	// "Workflows"); each one left out is on.
	Workflow *WorkflowSettings `json:"workflow,omitempty"`
	// Audit says how the audit trail is kept (docs/permissions.md,
	// "Durability"); nil takes every default.
	Audit *AuditSettings `json:"audit,omitempty"`
}

// AuditSettings are the audit trail's settings. The store checks the
// values when it opens (store.Options): a value it does not know stops it.
type AuditSettings struct {
	// Durability is "written" (the default: an effect waits until its
	// record has reached the operating system, and the record is on disk
	// within SyncWindowMS) or "strict" (an effect waits until its record
	// is on disk).
	Durability string `json:"durability,omitempty"`
	// SyncWindowMS bounds, in milliseconds, how long a written record
	// waits for its fsync; 0 means the default, 5.
	SyncWindowMS int64 `json:"syncWindowMs,omitempty"`
	// Calls is "aggregate" (the default: a run's log calls leave one
	// record for the run) or "per-call" (two records for each call).
	Calls string `json:"calls,omitempty"`
}

// WorkflowSettings are the workflow switches; nil means on.
type WorkflowSettings struct {
	AutoclassifyPureOperations *bool `json:"autoclassifyPureOperations,omitempty"`
	ValidatePureCode           *bool `json:"validatePureCode,omitempty"`
	StrictMode                 *bool `json:"strictMode,omitempty"`
	// Approval is "plan" (the default: one question for the whole plan
	// before anything runs) or "layer" (one before each layer that needs
	// one; the plan is still decided first).
	Approval string `json:"approval,omitempty"`
	// Tools sets an approval mode by operation: "auto" (the policy
	// decides whether to ask) or "ask" (always ask a person). A mode only
	// adds questions; it never allows what the policy refuses.
	Tools map[string]string `json:"tools,omitempty"`
}

// ConfigFile is the configuration's file name inside the data dir.
const ConfigFile = "config.json"

// LoadConfig reads dir/config.json. A missing file is the zero Config.
func LoadConfig(dir string) (Config, error) {
	var c Config
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config[%s]: %w", dir, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("config[%s]: %w", filepath.Join(dir, ConfigFile), err)
	}
	return c, nil
}

// SaveConfig writes c atomically (temp file, fsync, rename) with 0600 rights.
func SaveConfig(dir string, c Config) error {
	if err := Ensure(dir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, ConfigFile), append(b, '\n'), 0o600)
}

// AddOrigins merges origins into the config's allowed list.
func (c *Config) AddOrigins(origins ...string) {
	for _, o := range origins {
		if !slices.Contains(c.AllowedOrigins, o) {
			c.AllowedOrigins = append(c.AllowedOrigins, o)
		}
	}
	slices.Sort(c.AllowedOrigins)
}

// RemoveOrigins drops origins from the config's allowed list.
func (c *Config) RemoveOrigins(origins ...string) {
	c.AllowedOrigins = slices.DeleteFunc(c.AllowedOrigins, func(o string) bool {
		return slices.Contains(origins, o)
	})
}

// WriteFileAtomic writes data to path so that a crash leaves either the old
// or the new content, never a mix.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
