package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
)

// Browser names accepted in Options.Browsers, besides "all".
const (
	Chrome   = "chrome"
	Chromium = "chromium"
	Brave    = "brave"
	Edge     = "edge"
	Vivaldi  = "vivaldi"
	Firefox  = "firefox"
	All      = "all"
)

// Browsers lists every supported browser, in the order "all" expands to.
var Browsers = []string{Chrome, Chromium, Brave, Edge, Vivaldi, Firefox}

// location is where one browser looks for host manifests. Unix paths are
// relative to a base: the user's config home (Linux, Chromium family), the
// home directory (Linux Firefox, macOS user), or absolute (system).
type location struct {
	linuxUser   string // under the config home ($XDG_CONFIG_HOME or ~/.config)
	linuxSystem string
	darwinUser  string // under ~/Library/Application Support
	darwinSys   string
	winKey      string // under HKCU or HKLM
}

// The paths follow each vendor's documentation where there is one (Chrome's
// "Native messaging" page, Microsoft's Edge page, MDN "Native manifests");
// Brave and Vivaldi document none and these are the directories their
// builds read. See docs/install.md.
var locations = map[string]location{
	Chrome: {
		linuxUser:   "google-chrome/NativeMessagingHosts",
		linuxSystem: "/etc/opt/chrome/native-messaging-hosts",
		darwinUser:  "Google/Chrome/NativeMessagingHosts",
		darwinSys:   "/Library/Google/Chrome/NativeMessagingHosts",
		winKey:      `Software\Google\Chrome\NativeMessagingHosts`,
	},
	Chromium: {
		linuxUser:   "chromium/NativeMessagingHosts",
		linuxSystem: "/etc/chromium/native-messaging-hosts",
		darwinUser:  "Chromium/NativeMessagingHosts",
		darwinSys:   "/Library/Application Support/Chromium/NativeMessagingHosts",
		winKey:      `Software\Chromium\NativeMessagingHosts`,
	},
	Brave: {
		linuxUser:   "BraveSoftware/Brave-Browser/NativeMessagingHosts",
		linuxSystem: "/etc/opt/brave.com/brave/native-messaging-hosts",
		darwinUser:  "BraveSoftware/Brave-Browser/NativeMessagingHosts",
		darwinSys:   "/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts",
		winKey:      `Software\BraveSoftware\Brave-Browser\NativeMessagingHosts`,
	},
	Edge: {
		linuxUser:   "microsoft-edge/NativeMessagingHosts",
		linuxSystem: "/etc/opt/edge/native-messaging-hosts",
		darwinUser:  "Microsoft Edge/NativeMessagingHosts",
		darwinSys:   "/Library/Microsoft/Edge/NativeMessagingHosts",
		winKey:      `Software\Microsoft\Edge\NativeMessagingHosts`,
	},
	Vivaldi: {
		linuxUser:   "vivaldi/NativeMessagingHosts",
		linuxSystem: "/etc/opt/vivaldi/native-messaging-hosts",
		darwinUser:  "Vivaldi/NativeMessagingHosts",
		darwinSys:   "/Library/Application Support/Vivaldi/NativeMessagingHosts",
		winKey:      `Software\Vivaldi\NativeMessagingHosts`,
	},
	Firefox: {
		// Firefox's Linux user directory is under the home directory, not
		// the XDG config home.
		linuxUser:   ".mozilla/native-messaging-hosts",
		linuxSystem: "/usr/lib/mozilla/native-messaging-hosts",
		darwinUser:  "Mozilla/NativeMessagingHosts",
		darwinSys:   "/Library/Application Support/Mozilla/NativeMessagingHosts",
		winKey:      `Software\Mozilla\NativeMessagingHosts`,
	},
}

// isChromium reports whether b is a Chromium-family browser (allowed_origins,
// chrome-extension:// callers, --user-data-dir).
func isChromium(b string) bool { return b != Firefox }

// Options says what to install, check or remove. The zero value means: the
// chrome browser, the current user, the current OS, the real home directory.
type Options struct {
	// ExtensionIDs are the callers to admit: Chrome IDs (32 letters a-p)
	// go into Chromium-family manifests, Firefox add-on IDs (email-like or
	// {GUID}) into Firefox's.
	ExtensionIDs []string
	// Browsers to act on; "all" means every supported one. Default chrome.
	Browsers []string
	// System installs for every user of the machine (needs root/admin).
	System bool
	// UserDataDir, when set, is a Chromium --user-data-dir: the manifest
	// goes to DIR/NativeMessagingHosts, which that profile reads instead of
	// the browser's default user directory. Chromium family only; not with
	// System; not on Windows, where Chromium reads the registry.
	UserDataDir string
	// BinaryPath is the absolute path of the nmhost binary the manifest
	// names. Needed by Install; Doctor compares it with the manifest.
	BinaryPath string
	// HomeDir defaults to os.UserHomeDir. When set (as tests do), the Linux
	// config home is HomeDir/.config regardless of $XDG_CONFIG_HOME.
	HomeDir string
	// ConfigHome overrides the Linux config home for Chromium-family user
	// manifests. Default: $XDG_CONFIG_HOME when HomeDir is unset and the
	// variable holds an absolute path, otherwise HomeDir/.config.
	ConfigHome string
	// GOOS defaults to runtime.GOOS; tests set it to check darwin paths on
	// linux. Installing for windows from another OS is refused.
	GOOS string
	// BuildCache is Go's build cache (`go env GOCACHE`), when known. A
	// binary under it, or under any directory named go-build, is refused
	// by Install and failed by Doctor: it does not stay there.
	BuildCache string
	// TempDirs are directories the system cleans up (DefaultTempDirs). A
	// binary under one is refused by Install and failed by Doctor, unless
	// UserDataDir is set. Empty: no such check.
	TempDirs []string
}

// resolved is Options with defaults applied.
type resolved struct {
	Options
	browsers   []string
	explicit   bool // browsers were named, not "all"
	configHome string
}

func (o Options) resolve() (resolved, error) {
	r := resolved{Options: o}
	if r.GOOS == "" {
		r.GOOS = runtime.GOOS
	}
	switch r.GOOS {
	case "linux", "darwin", "windows":
	default:
		return r, fmt.Errorf("manifest: os[%s]: native messaging manifests are not supported here", r.GOOS)
	}
	if r.HomeDir == "" && !r.System {
		h, err := os.UserHomeDir()
		if err != nil {
			return r, fmt.Errorf("manifest: home directory: %w", err)
		}
		r.HomeDir = h
		if x := os.Getenv("XDG_CONFIG_HOME"); r.ConfigHome == "" && filepath.IsAbs(x) {
			r.ConfigHome = x
		}
	}
	r.configHome = r.ConfigHome
	if r.configHome == "" && r.HomeDir != "" {
		r.configHome = filepath.Join(r.HomeDir, ".config")
	}
	names := o.Browsers
	if len(names) == 0 {
		names = []string{Chrome}
	}
	r.explicit = true
	for _, b := range names {
		switch {
		case b == All:
			r.explicit = false
			for _, x := range Browsers {
				if !slices.Contains(r.browsers, x) {
					r.browsers = append(r.browsers, x)
				}
			}
		case locations[b] != (location{}):
			if !slices.Contains(r.browsers, b) {
				r.browsers = append(r.browsers, b)
			}
		default:
			return r, fmt.Errorf("manifest: browser[%.40q]: unknown; use one of %v or all", b, Browsers)
		}
	}
	if r.UserDataDir != "" {
		if r.System {
			return r, fmt.Errorf("manifest: user-data-dir[%s]: cannot be combined with a system install", r.UserDataDir)
		}
		if r.GOOS == "windows" {
			return r, fmt.Errorf("manifest: user-data-dir[%s]: Chromium on Windows finds hosts in the registry, not in the profile", r.UserDataDir)
		}
		abs, err := filepath.Abs(r.UserDataDir)
		if err != nil {
			return r, fmt.Errorf("manifest: user-data-dir[%s]: %w", r.UserDataDir, err)
		}
		r.UserDataDir = abs
		// A profile directory belongs to one Chromium-family browser;
		// Firefox never reads it.
		if r.explicit && slices.Contains(r.browsers, Firefox) {
			return r, fmt.Errorf("manifest: browser[firefox] user-data-dir[%s]: Firefox does not read Chromium profile directories", r.UserDataDir)
		}
		r.browsers = slices.DeleteFunc(r.browsers, func(b string) bool { return !isChromium(b) })
	}
	return r, nil
}

// dir returns the directory that holds browser b's manifest.
func (r resolved) dir(b string) (string, error) {
	loc := locations[b]
	if r.UserDataDir != "" && isChromium(b) {
		return filepath.Join(r.UserDataDir, "NativeMessagingHosts"), nil
	}
	switch {
	case r.GOOS == "linux" && r.System:
		return loc.linuxSystem, nil
	case r.GOOS == "darwin" && r.System:
		return loc.darwinSys, nil
	case r.GOOS == "windows":
		// Windows browsers find the manifest through the registry; the file
		// itself may live anywhere, so it goes in nmhost's own directory.
		base := filepath.Join(r.HomeDir, "AppData", "Local")
		if r.System {
			base = os.Getenv("ProgramData")
			if base == "" {
				base = `C:\ProgramData`
			}
		}
		return filepath.Join(base, "nmhost", "NativeMessagingHosts", b), nil
	}
	if r.HomeDir == "" {
		return "", fmt.Errorf("manifest: browser[%s]: no home directory", b)
	}
	switch {
	case r.GOOS == "linux" && b == Firefox:
		return filepath.Join(r.HomeDir, loc.linuxUser), nil
	case r.GOOS == "linux":
		return filepath.Join(r.configHome, loc.linuxUser), nil
	default: // darwin, user
		return filepath.Join(r.HomeDir, "Library", "Application Support", loc.darwinUser), nil
	}
}

// ManifestPath returns the file that holds browser's manifest under opts.
func ManifestPath(opts Options, browser string) (string, error) {
	opts.Browsers = []string{browser}
	r, err := opts.resolve()
	if err != nil {
		return "", err
	}
	if len(r.browsers) == 0 {
		return "", fmt.Errorf("manifest: browser[%s]: not applicable with these options", browser)
	}
	d, err := r.dir(browser)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, HostName+".json"), nil
}

// RegistryKey returns the Windows registry key (under HKCU, or HKLM for a
// system install) whose default value names browser's manifest file.
func RegistryKey(browser string) (string, error) {
	loc, ok := locations[browser]
	if !ok {
		return "", fmt.Errorf("manifest: browser[%.40q]: unknown", browser)
	}
	return loc.winKey + `\` + HostName, nil
}
