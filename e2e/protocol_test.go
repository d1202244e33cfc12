//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostOfAnotherProtocolGetsNothing: a host process that reports
// another protocol version in hello is sent no other request (a canary
// file counts what it received), every request fails with
// protocol_mismatch saying which side to update, and the popup says so
// plainly. Nor is anything it asks done, in the other direction: its
// clipboard write and read, its prompt and its prompt-cancel are refused
// unanswered (the clipboard keeps what it held, no prompt window opens,
// no answer reaches it) and counted in that message. The real host
// answers again once it is back.
func TestHostOfAnotherProtocolGetsNothing(t *testing.T) {
	manifestPath := hostManifest(t)
	original, err := os.ReadFile(manifestPath)
	if err != nil {
		t.Fatal(err)
	}
	opts := page(t, extURL("options.html"))
	waitForBundledAgents(t, opts)
	t.Cleanup(func() {
		if err := os.WriteFile(manifestPath, original, 0o644); err != nil {
			t.Errorf("restoring the host manifest: %v", err)
		}
		killExe(t, "otherhost-")
		waitForHost(t, opts, func(r reply) bool { return r.Success })
	})
	for _, c := range []struct {
		version int
		want    string
	}{
		{2, "nmhost speaks protocol 2, older than this extension's 3: update nmhost"},
		{4, "nmhost speaks protocol 4, newer than this extension's 3: update the extension"},
	} {
		t.Run("protocol "+strconv.Itoa(c.version), func(t *testing.T) {
			dir := t.TempDir()
			bin := filepath.Join(dir, "otherhost-"+strconv.Itoa(c.version))
			canary := filepath.Join(dir, "received")
			const marker = "e2e-written-by-another-protocol"
			build := exec.Command("go", "build", "-o", bin, "-ldflags", "-X main.protocol="+strconv.Itoa(c.version)+" -X main.canary="+canary+" -X main.marker="+marker, "./testdata/otherhost")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("building otherhost: %v\n%s", err, out)
			}
			held := "e2e clipboard before protocol " + strconv.Itoa(c.version)
			clipboardWrite(t, opts, held)
			pointManifest(t, manifestPath, original, bin)
			killHosts(t)
			killExe(t, "otherhost-")
			// What the host asked right after its hello is refused and
			// counted: the error says so once all four arrived.
			const refused = "it asked this browser for 4 things (browser-call, browser-call, prompt, prompt-cancel), and none was done"
			r := waitForHost(t, opts, func(r reply) bool {
				return r.Code == "protocol_mismatch" && strings.Contains(r.Error, c.want) && strings.Contains(r.Error, refused)
			})
			if got := clipboardRead(t, opts); got != held {
				t.Fatalf("the clipboard holds %q after a host of protocol %d asked to write %q; want %q kept (%s)", got, c.version, marker, held, r.Error)
			}
			if tg := unansweredPrompt(); tg != nil {
				t.Fatalf("a host of protocol %d opened a prompt window: %s", c.version, tg.URL)
			}
			for _, typ := range []string{"list-agents", "list-sessions", "network-fetch", "hello"} {
				if r := hostCall(t, opts, typ, map[string]any{"agentId": "x", "url": "http://127.0.0.1:1/"}); r.Code != "protocol_mismatch" {
					t.Fatalf("%s through a host of protocol %d: %+v; want protocol_mismatch", typ, c.version, r)
				}
			}
			popup := page(t, extURL("popup.html"))
			waitFor(t, popup, `!document.getElementById('host-problem').hidden && document.getElementById('host-problem').textContent.includes(`+strconv.Quote(c.want)+`)`)
			if got, err := os.ReadFile(canary); err == nil || !os.IsNotExist(err) {
				t.Fatalf("the host of protocol %d received requests besides hello: %q (%v)", c.version, got, err)
			}
		})
	}
}

// clipboardWrite puts text on the clipboard from an extension page, as
// the offscreen document does (this copy of the extension holds
// clipboardWrite: grantClipboard).
func clipboardWrite(t *testing.T, ext context.Context, text string) {
	t.Helper()
	b, _ := json.Marshal(text)
	if !eval[bool](t, ext, `(() => { const a = document.createElement('textarea'); a.value = `+string(b)+`; document.body.append(a); a.select(); const ok = document.execCommand('copy'); a.remove(); return ok })()`) {
		t.Fatal("the clipboard could not be written")
	}
}

// clipboardRead is what the clipboard holds, read from an extension page.
func clipboardRead(t *testing.T, ext context.Context) string {
	t.Helper()
	return eval[string](t, ext, `(() => { const a = document.createElement('textarea'); document.body.append(a); a.focus(); const ok = document.execCommand('paste'); const v = a.value; a.remove(); return ok ? v : 'paste refused' })()`)
}

// hostManifest finds the host manifest nmhost install wrote for the
// test's Chromium profile.
func hostManifest(t *testing.T) string {
	t.Helper()
	var found string
	filepath.WalkDir(chromiumProfile, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "com.agentgate.nmhost.json" {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no com.agentgate.nmhost.json under %s", chromiumProfile)
	}
	return found
}

// pointManifest rewrites the host manifest to launch bin instead.
func pointManifest(t *testing.T, path string, original []byte, bin string) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(original, &m); err != nil {
		t.Fatal(err)
	}
	m["path"] = bin
	b, _ := json.Marshal(m)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// killExe sends SIGKILL to every process whose executable's name starts
// with prefix.
func killExe(t *testing.T, prefix string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(filepath.Base(exe), prefix) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitForHost asks hello until done accepts the reply. The port notices a
// killed host when it notices: until then a call may still meet it
// (host_disconnected) or its failed hello (protocol_mismatch).
func waitForHost(t *testing.T, ext context.Context, done func(reply) bool) reply {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		r := hostCall(t, ext, "hello", nil)
		if done(r) {
			return r
		}
		if (r.Code != "host_disconnected" && r.Code != "protocol_mismatch") || time.Now().After(deadline) {
			t.Fatalf("hello: %+v", r)
		}
	}
}
