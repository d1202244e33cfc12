package manifest

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	chromeID  = "abcdefghijklmnopabcdefghijklmnop"
	chromeID2 = "ponmlkjihgfedcbaponmlkjihgfedcba"
	geckoID   = "agent@agentgate.example"
	geckoGUID = "{12345678-90ab-cdef-1234-567890abcdef}"
)

// TestManifestPaths is the golden table: every browser x OS x scope.
func TestManifestPaths(t *testing.T) {
	const home = "/home/u"
	const mhome = "/Users/u"
	const as = mhome + "/Library/Application Support"
	golden := []struct {
		browser, goos string
		system        bool
		want          string
	}{
		{Chrome, "linux", false, home + "/.config/google-chrome/NativeMessagingHosts"},
		{Chromium, "linux", false, home + "/.config/chromium/NativeMessagingHosts"},
		{Brave, "linux", false, home + "/.config/BraveSoftware/Brave-Browser/NativeMessagingHosts"},
		{Edge, "linux", false, home + "/.config/microsoft-edge/NativeMessagingHosts"},
		{Vivaldi, "linux", false, home + "/.config/vivaldi/NativeMessagingHosts"},
		{Firefox, "linux", false, home + "/.mozilla/native-messaging-hosts"},

		{Chrome, "linux", true, "/etc/opt/chrome/native-messaging-hosts"},
		{Chromium, "linux", true, "/etc/chromium/native-messaging-hosts"},
		{Brave, "linux", true, "/etc/opt/brave.com/brave/native-messaging-hosts"},
		{Edge, "linux", true, "/etc/opt/edge/native-messaging-hosts"},
		{Vivaldi, "linux", true, "/etc/opt/vivaldi/native-messaging-hosts"},
		{Firefox, "linux", true, "/usr/lib/mozilla/native-messaging-hosts"},

		{Chrome, "darwin", false, as + "/Google/Chrome/NativeMessagingHosts"},
		{Chromium, "darwin", false, as + "/Chromium/NativeMessagingHosts"},
		{Brave, "darwin", false, as + "/BraveSoftware/Brave-Browser/NativeMessagingHosts"},
		{Edge, "darwin", false, as + "/Microsoft Edge/NativeMessagingHosts"},
		{Vivaldi, "darwin", false, as + "/Vivaldi/NativeMessagingHosts"},
		{Firefox, "darwin", false, as + "/Mozilla/NativeMessagingHosts"},

		{Chrome, "darwin", true, "/Library/Google/Chrome/NativeMessagingHosts"},
		{Chromium, "darwin", true, "/Library/Application Support/Chromium/NativeMessagingHosts"},
		{Brave, "darwin", true, "/Library/Application Support/BraveSoftware/Brave-Browser/NativeMessagingHosts"},
		{Edge, "darwin", true, "/Library/Microsoft/Edge/NativeMessagingHosts"},
		{Vivaldi, "darwin", true, "/Library/Application Support/Vivaldi/NativeMessagingHosts"},
		{Firefox, "darwin", true, "/Library/Application Support/Mozilla/NativeMessagingHosts"},
	}
	seen := map[[3]string]bool{}
	for _, g := range golden {
		scope := "user"
		if g.system {
			scope = "system"
		}
		seen[[3]string{g.browser, g.goos, scope}] = true
		t.Run(g.goos+"/"+scope+"/"+g.browser, func(t *testing.T) {
			h := home
			if g.goos == "darwin" {
				h = mhome
			}
			got, err := ManifestPath(Options{GOOS: g.goos, HomeDir: h, System: g.system}, g.browser)
			if err != nil {
				t.Fatal(err)
			}
			if want := g.want + "/" + HostName + ".json"; got != want {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
	// The table must cover every combination.
	for _, b := range Browsers {
		for _, goos := range []string{"linux", "darwin"} {
			for _, scope := range []string{"user", "system"} {
				if !seen[[3]string{b, goos, scope}] {
					t.Errorf("golden table misses %s/%s/%s", goos, scope, b)
				}
			}
		}
	}
}

func TestRegistryKeys(t *testing.T) {
	want := map[string]string{
		Chrome:   `Software\Google\Chrome\NativeMessagingHosts\com.agentgate.nmhost`,
		Chromium: `Software\Chromium\NativeMessagingHosts\com.agentgate.nmhost`,
		Brave:    `Software\BraveSoftware\Brave-Browser\NativeMessagingHosts\com.agentgate.nmhost`,
		Edge:     `Software\Microsoft\Edge\NativeMessagingHosts\com.agentgate.nmhost`,
		Vivaldi:  `Software\Vivaldi\NativeMessagingHosts\com.agentgate.nmhost`,
		Firefox:  `Software\Mozilla\NativeMessagingHosts\com.agentgate.nmhost`,
	}
	for _, b := range Browsers {
		t.Run(b, func(t *testing.T) {
			got, err := RegistryKey(b)
			if err != nil || got != want[b] {
				t.Fatalf("RegistryKey(%s) = %q, %v; want %q", b, got, err, want[b])
			}
		})
	}
	if _, err := RegistryKey("netscape"); err == nil {
		t.Fatal("unknown browser accepted")
	}
}

func TestConfigHomeAndUserDataDir(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		browser string
		want    string
		wantErr bool
	}{
		{"config home override", Options{GOOS: "linux", HomeDir: "/h", ConfigHome: "/xdg"}, Chrome, "/xdg/google-chrome/NativeMessagingHosts", false},
		{"firefox ignores config home", Options{GOOS: "linux", HomeDir: "/h", ConfigHome: "/xdg"}, Firefox, "/h/.mozilla/native-messaging-hosts", false},
		{"user-data-dir linux", Options{GOOS: "linux", HomeDir: "/h", UserDataDir: "/tmp/profile"}, Chromium, "/tmp/profile/NativeMessagingHosts", false},
		{"user-data-dir darwin", Options{GOOS: "darwin", HomeDir: "/h", UserDataDir: "/tmp/profile"}, Chrome, "/tmp/profile/NativeMessagingHosts", false},
		{"user-data-dir refuses firefox", Options{GOOS: "linux", HomeDir: "/h", UserDataDir: "/tmp/profile"}, Firefox, "", true},
		{"user-data-dir refuses system", Options{GOOS: "linux", System: true, UserDataDir: "/tmp/profile"}, Chrome, "", true},
		{"user-data-dir refuses windows", Options{GOOS: "windows", HomeDir: `C:\Users\u`, UserDataDir: `C:\p`}, Chrome, "", true},
		{"unknown browser", Options{GOOS: "linux", HomeDir: "/h"}, "netscape", "", true},
		{"hostile browser name", Options{GOOS: "linux", HomeDir: "/h"}, "../../etc", "", true},
		{"unknown os", Options{GOOS: "plan9", HomeDir: "/h"}, Chrome, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ManifestPath(tt.opts, tt.browser)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && got != filepath.Join(tt.want, HostName+".json") {
				t.Fatalf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	t.Run("host name", func(t *testing.T) {
		if !ValidName(HostName) {
			t.Fatalf("HostName %q is invalid", HostName)
		}
		for _, bad := range []string{"", ".a", "a.", "a..b", "A.b", "a-b", "a/b", "a b", "../x", "a\x00b"} {
			if ValidName(bad) {
				t.Errorf("ValidName(%q) = true", bad)
			}
		}
	})
	t.Run("chrome ids", func(t *testing.T) {
		if !ValidChromeID(chromeID) {
			t.Fatal("good id refused")
		}
		for _, bad := range []string{
			"", "../../etc", "*", strings.Repeat("a", 31), strings.Repeat("a", 33),
			strings.ToUpper(chromeID), strings.Repeat("q", 32), "abcdefghijklmnopabcdefghijklmno/",
			"chrome-extension://" + chromeID + "/", chromeID + "\n",
		} {
			if ValidChromeID(bad) {
				t.Errorf("ValidChromeID(%q) = true", bad)
			}
		}
	})
	t.Run("firefox ids", func(t *testing.T) {
		for _, good := range []string{geckoID, geckoGUID, "x@y", "@y.z"} {
			if !ValidFirefoxID(good) {
				t.Errorf("ValidFirefoxID(%q) = false", good)
			}
		}
		for _, bad := range []string{"", "../../etc", "*", "a@b/c", "a@../x", "a@b..c", "noat", "{1234}", "a b@c", "a@b\n", geckoGUID + "x", strings.Repeat("a", 251) + "@b.cd"} {
			if ValidFirefoxID(bad) {
				t.Errorf("ValidFirefoxID(%q) = true", bad)
			}
		}
	})
	t.Run("origins", func(t *testing.T) {
		got := AllowedOrigins([]string{chromeID, "*", chromeID, geckoID, chromeID2})
		want := []string{"chrome-extension://" + chromeID + "/", "chrome-extension://" + chromeID2 + "/"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	})
}

// fakeBinary makes an executable file to stand for nmhost.
func fakeBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nmhost")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func failed(checks []Check) []Check {
	var out []Check
	for _, c := range checks {
		if !c.OK {
			out = append(out, c)
		}
	}
	return out
}

func TestInstallThenDoctor(t *testing.T) {
	bin := fakeBinary(t)
	for _, goos := range []string{"linux", "darwin"} {
		t.Run(goos, func(t *testing.T) {
			home := t.TempDir()
			opts := Options{
				ExtensionIDs: []string{chromeID, geckoID}, Browsers: []string{All},
				BinaryPath: bin, HomeDir: home, GOOS: goos,
			}
			inst, err := Install(opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(inst) != len(Browsers) {
				t.Fatalf("installed %d manifests, want %d", len(inst), len(Browsers))
			}
			for _, in := range inst {
				want, _ := ManifestPath(opts, in.Browser)
				if in.Path != want {
					t.Errorf("%s: wrote %s, want %s", in.Browser, in.Path, want)
				}
				st, err := os.Stat(in.Path)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o644 {
					t.Errorf("%s: mode %v, want 0644", in.Path, st.Mode().Perm())
				}
				if dst, _ := os.Stat(filepath.Dir(in.Path)); dst.Mode().Perm() != 0o755 {
					t.Errorf("%s: dir mode %v, want 0755", in.Path, dst.Mode().Perm())
				}
				raw, _ := os.ReadFile(in.Path)
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				if m["name"] != HostName || m["type"] != "stdio" || m["path"] != bin {
					t.Errorf("%s: manifest %v", in.Browser, m)
				}
				if in.Browser == Firefox {
					if _, ok := m["allowed_origins"]; ok || len(m["allowed_extensions"].([]any)) != 1 {
						t.Errorf("firefox manifest: %s", raw)
					}
				} else if _, ok := m["allowed_extensions"]; ok || m["allowed_origins"].([]any)[0] != "chrome-extension://"+chromeID+"/" {
					t.Errorf("%s manifest: %s", in.Browser, raw)
				}
			}
			// No temporary files are left behind.
			for _, in := range inst {
				ents, _ := os.ReadDir(filepath.Dir(in.Path))
				if len(ents) != 1 {
					t.Errorf("%s holds %d entries, want only the manifest", filepath.Dir(in.Path), len(ents))
				}
			}
			checks := Doctor(opts)
			if f := failed(checks); len(f) > 0 {
				t.Fatalf("doctor failed: %+v", f)
			}
			if len(checks) != 5*len(Browsers) {
				t.Fatalf("%d checks, want %d", len(checks), 5*len(Browsers))
			}
			// Installing again replaces the files in place.
			if _, err := Install(opts); err != nil {
				t.Fatal(err)
			}
			if f := failed(Doctor(opts)); len(f) > 0 {
				t.Fatalf("doctor after reinstall: %+v", f)
			}
		})
	}
}

func TestInstallUserDataDir(t *testing.T) {
	udd := t.TempDir()
	opts := Options{ExtensionIDs: []string{chromeID}, Browsers: []string{Chromium}, UserDataDir: udd, BinaryPath: fakeBinary(t), HomeDir: t.TempDir(), GOOS: "linux"}
	inst, err := Install(opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(udd, "NativeMessagingHosts", HostName+".json"); len(inst) != 1 || inst[0].Path != want {
		t.Fatalf("installed %+v, want exactly %s", inst, want)
	}
	if f := failed(Doctor(opts)); len(f) > 0 {
		t.Fatalf("doctor: %+v", f)
	}
	// "all" with a user-data-dir writes the one shared path once.
	opts.Browsers = []string{All}
	if inst, err := Install(opts); err != nil || len(inst) != 1 {
		t.Fatalf("all + user-data-dir: %+v, %v", inst, err)
	}
}

func TestInstallRefuses(t *testing.T) {
	bin := fakeBinary(t)
	notExec := filepath.Join(t.TempDir(), "nmhost")
	os.WriteFile(notExec, []byte("x"), 0o644)
	base := func() Options {
		return Options{ExtensionIDs: []string{chromeID}, BinaryPath: bin, HomeDir: t.TempDir(), GOOS: "linux"}
	}
	tests := []struct {
		name   string
		modify func(*Options)
	}{
		{"relative binary path", func(o *Options) { o.BinaryPath = "nmhost" }},
		{"dot-relative binary path", func(o *Options) { o.BinaryPath = "./bin/nmhost" }},
		{"empty binary path", func(o *Options) { o.BinaryPath = "" }},
		{"missing binary", func(o *Options) { o.BinaryPath = "/nonexistent/nmhost" }},
		{"binary is a directory", func(o *Options) { o.BinaryPath = t.TempDir() }},
		{"binary not executable", func(o *Options) { o.BinaryPath = notExec }},
		{"no extension id", func(o *Options) { o.ExtensionIDs = nil }},
		{"id ../../etc", func(o *Options) { o.ExtensionIDs = []string{"../../etc"} }},
		{"id uppercase", func(o *Options) { o.ExtensionIDs = []string{strings.ToUpper(chromeID)} }},
		{"id 31 chars", func(o *Options) { o.ExtensionIDs = []string{chromeID[:31]} }},
		{"id *", func(o *Options) { o.ExtensionIDs = []string{"*"} }},
		{"one bad id among good ones", func(o *Options) { o.ExtensionIDs = []string{chromeID, "*"} }},
		{"id with JSON injection", func(o *Options) { o.ExtensionIDs = []string{`a","chrome-extension://x/`} }},
		{"chrome without a chrome id", func(o *Options) { o.ExtensionIDs = []string{geckoID} }},
		{"firefox without a firefox id", func(o *Options) { o.Browsers = []string{Firefox} }},
		{"unknown browser", func(o *Options) { o.Browsers = []string{"opera"} }},
		{"windows from another os", func(o *Options) { o.GOOS = "windows" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.modify(&o)
			inst, err := Install(o)
			if err == nil {
				t.Fatalf("Install accepted it: %+v", inst)
			}
			if len(inst) != 0 {
				t.Fatalf("Install wrote %+v before refusing", inst)
			}
			if ents, _ := os.ReadDir(o.HomeDir); len(ents) != 0 {
				t.Fatalf("home dir not empty after a refused install")
			}
		})
	}
}

// writeManifest writes m (or raw bytes) where browser b's manifest goes.
func writeManifest(t *testing.T, opts Options, b string, m any) string {
	t.Helper()
	p, err := ManifestPath(opts, b)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	data, ok := m.([]byte)
	if !ok {
		data, _ = json.Marshal(m)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDoctorFlagsProblems(t *testing.T) {
	bin := fakeBinary(t)
	notExec := filepath.Join(t.TempDir(), "nmhost")
	os.WriteFile(notExec, []byte("x"), 0o644)
	good := func() Manifest {
		return Manifest{Name: HostName, Description: Description, Path: bin, Type: "stdio", AllowedOrigins: []string{"chrome-extension://" + chromeID + "/"}}
	}
	tests := []struct {
		name      string
		manifest  any // nil: no file
		wantCheck string
	}{
		{"missing manifest", nil, "browser[chrome] manifest"},
		{"not JSON", []byte("{oops"), "browser[chrome] manifest"},
		{"name mismatch", func() any { m := good(); m.Name = "com.other.host"; return m }(), "browser[chrome] name"},
		{"missing origin", func() any {
			m := good()
			m.AllowedOrigins = []string{"chrome-extension://" + chromeID2 + "/"}
			return m
		}(), "browser[chrome] origin"},
		{"empty origins", func() any { m := good(); m.AllowedOrigins = nil; return m }(), "browser[chrome] origin"},
		{"relative path", func() any { m := good(); m.Path = "bin/nmhost"; return m }(), "browser[chrome] path"},
		{"non-executable path", func() any { m := good(); m.Path = notExec; return m }(), "browser[chrome] path"},
		{"missing binary", func() any { m := good(); m.Path = "/nonexistent/nmhost"; return m }(), "browser[chrome] path"},
		{"directory as path", func() any { m := good(); m.Path = t.TempDir(); return m }(), "browser[chrome] path"},
		{"wrong type", func() any { m := good(); m.Type = "socket"; return m }(), "browser[chrome] type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{ExtensionIDs: []string{chromeID}, HomeDir: t.TempDir(), GOOS: "linux", BinaryPath: bin}
			if tt.manifest != nil {
				writeManifest(t, opts, Chrome, tt.manifest)
			}
			f := failed(Doctor(opts))
			if len(f) != 1 || f[0].Name != tt.wantCheck {
				t.Fatalf("failed checks %+v, want exactly %q", f, tt.wantCheck)
			}
			if f[0].Detail == "" {
				t.Fatal("a failed check must say why")
			}
		})
	}
	t.Run("all with nothing installed fails once", func(t *testing.T) {
		f := failed(Doctor(Options{Browsers: []string{All}, HomeDir: t.TempDir(), GOOS: "linux"}))
		if len(f) != 1 || f[0].Name != "manifests" {
			t.Fatalf("failed checks %+v", f)
		}
	})
	t.Run("bad extension id", func(t *testing.T) {
		f := failed(Doctor(Options{ExtensionIDs: []string{"*"}, HomeDir: t.TempDir(), GOOS: "linux"}))
		if len(f) != 1 {
			t.Fatalf("failed checks %+v", f)
		}
	})
}

func TestUninstall(t *testing.T) {
	bin := fakeBinary(t)
	home := t.TempDir()
	opts := Options{ExtensionIDs: []string{chromeID, geckoID}, Browsers: []string{All}, BinaryPath: bin, HomeDir: home, GOOS: "linux"}
	inst, err := Install(opts)
	if err != nil {
		t.Fatal(err)
	}
	// Foreign files: another host in the same directory, and a file under
	// our name that some other tool wrote.
	chromeDir := filepath.Dir(inst[0].Path)
	other := filepath.Join(chromeDir, "com.other.host.json")
	os.WriteFile(other, []byte(`{"name":"com.other.host"}`), 0o644)
	impostor := writeManifest(t, opts, Edge, Manifest{Name: HostName, Description: "someone else's", Path: "/usr/bin/x", Type: "stdio"})
	target := filepath.Join(t.TempDir(), "target.json")
	os.WriteFile(target, []byte(`{}`), 0o644)
	firefoxPath, _ := ManifestPath(opts, Firefox)
	os.Remove(firefoxPath)
	if err := os.Symlink(target, firefoxPath); err != nil {
		t.Fatal(err)
	}

	removed, err := Uninstall(opts)
	if !errors.Is(err, ErrForeign) {
		t.Fatalf("err = %v, want ErrForeign for the files left in place", err)
	}
	if len(removed) != len(Browsers)-2 {
		t.Fatalf("removed %v", removed)
	}
	for _, p := range []string{other, impostor, target, firefoxPath} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("foreign file %s was touched: %v", p, err)
		}
	}
	for _, p := range removed {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists", p)
		}
	}
	// Nothing left of ours: a second run removes nothing and only reports
	// the foreign files again.
	os.Remove(impostor)
	os.Remove(firefoxPath)
	removed, err = Uninstall(opts)
	if err != nil || len(removed) != 0 {
		t.Fatalf("second uninstall: %v, %v", removed, err)
	}
}

func TestCheckWritableDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if c := CheckWritableDir(dir); !c.OK {
		t.Fatalf("%+v", c)
	}
	ro := t.TempDir()
	os.Chmod(ro, 0o500)
	defer os.Chmod(ro, 0o700)
	if os.Geteuid() != 0 {
		if c := CheckWritableDir(ro); c.OK {
			t.Fatalf("read-only dir reported writable: %+v", c)
		}
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if c := CheckWritableDir(filepath.Join(f, "sub")); c.OK {
		t.Fatalf("path under a file reported writable: %+v", c)
	}
}
