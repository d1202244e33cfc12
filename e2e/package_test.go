//go:build linux && e2e

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// otherBrowser starts a Chromium of its own, with its own profile and host
// data, loading the extension from dir, and returns its first tab's
// context once the extension's service worker is up.
func otherBrowser(t *testing.T, dir string) context.Context {
	t.Helper()
	work := t.TempDir()
	profile := filepath.Join(work, "profile")
	install := exec.Command(nmhostBin, "install", "--extension-id", ExtensionID, "--browser", "chromium", "--user-data-dir", profile)
	install.Env = append(os.Environ(), "NMHOST_DATA_DIR="+filepath.Join(work, "data"))
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("nmhost install: %v\n%s", err, out)
	}
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.UserDataDir(profile), chromedp.NoSandbox,
		chromedp.Flag("disable-extensions", false), chromedp.Flag("load-extension", dir),
		chromedp.Flag("disable-extensions-except", dir), chromedp.Flag("disable-gpu", true),
		chromedp.Env("NMHOST_DATA_DIR="+filepath.Join(work, "data")))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	if err := waitForExtension(ctx); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// openIn opens url in a new tab of the browser of ctx.
func openIn(t *testing.T, ctx context.Context, url string) context.Context {
	t.Helper()
	res, err := chromedp.CallBrowser(ctx, target.CreateTarget, target.CreateTargetParams{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	tab, cancel := chromedp.NewContext(ctx, chromedp.WithTargetID(res.TargetID))
	t.Cleanup(cancel)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, cancelEval := context.WithTimeout(tab, 10*time.Second)
		ok, err := evalErr[bool](c, `document.readyState === 'complete' && location.href.startsWith('chrome-extension:') && typeof chrome.runtime?.sendMessage === 'function'`)
		cancelEval()
		if err == nil && ok {
			return tab
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not load: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPackagedExtensionLoadsWithPyodide: scripts/package-extension.sh
// builds a zip which, unzipped and loaded in Chromium, has Pyodide (a
// sandbox loads it: the pool reports ready) and the example agents, and
// its popup shows no "Pyodide is missing" notice; the repository's
// extension directory without Pyodide shows that notice.
func TestPackagedExtensionLoadsWithPyodide(t *testing.T) {
	out := t.TempDir()
	pkg := exec.Command("bash", "../scripts/package-extension.sh")
	pkg.Env = append(os.Environ(), "PACKAGE_OUT="+out)
	zipPath, err := pkg.Output()
	if err != nil {
		t.Fatalf("package-extension.sh: %v", err)
	}
	unpacked := t.TempDir()
	if b, err := exec.Command("unzip", "-q", strings.TrimSpace(string(zipPath)), "-d", unpacked).CombinedOutput(); err != nil {
		t.Fatalf("unzip: %v\n%s", err, b)
	}
	const hasPyodideAgent = `chrome.runtime.sendMessage({type: 'host', request: {type: 'list-agents'}}).then(r => r.success && r.data.agents.some(a => a.profile.agentId === 'py-word-count'))`
	const notice = `document.getElementById('pyodide-missing')`
	t.Run("package", func(t *testing.T) {
		b := otherBrowser(t, filepath.Join(unpacked, "agentgate"))
		opts := openIn(t, b, extURL("options.html"))
		eval[bool](t, opts, `new Promise(r => { const w = () => `+hasPyodideAgent+`.then(ok => ok ? r(true) : setTimeout(w, 200)); w() })`)
		eval[bool](t, opts, `chrome.runtime.sendMessage({type: 'python-warm'}).then(() => true)`)
		c, cancel := context.WithTimeout(opts, 120*time.Second)
		defer cancel()
		if _, err := chromedp.Run(c, chromedp.Evaluate[bool](`new Promise(r => { const w = () => chrome.runtime.sendMessage({type: 'python-state'}).then(s => s.data.pool === 'ready' ? r(true) : setTimeout(w, 200)); w() })`, chromedp.EvalAwaitPromise)); err != nil {
			t.Fatalf("the packaged extension never had a Pyodide loaded: %v", err)
		}
		popup := openIn(t, b, extURL("popup.html"))
		waitFor(t, popup, `document.querySelector('#agent option[value="py-word-count"]')`)
		if !eval[bool](t, popup, notice+`.hidden`) {
			t.Fatal("the packaged extension's popup says Pyodide is missing")
		}
	})
	t.Run("repository without Pyodide", func(t *testing.T) {
		bare := t.TempDir()
		if err := os.CopyFS(bare, os.DirFS("../extension")); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(bare, "pyodide")); err != nil {
			t.Fatal(err)
		}
		b := otherBrowser(t, bare)
		opts := openIn(t, b, extURL("options.html"))
		// Without the example agents either: one Python agent to list.
		b64 := `chrome.runtime.sendMessage({type: 'host', request: {type: 'install-agent', profile: {agentId: 'e2e-py-nopyodide', runtime: 'python', permissions: {required: ['console.log']}, capabilities: {maxMemory: 268435456}}, module: "print('hi')"}}).then(r => r.success)`
		if !eval[bool](t, opts, b64) {
			t.Fatal("install-agent failed")
		}
		popup := openIn(t, b, extURL("popup.html"))
		waitFor(t, popup, `document.querySelector('#agent option[value="e2e-py-nopyodide"]') && !`+notice+`.hidden`)
		if text := eval[string](t, popup, notice+`.textContent`); !strings.Contains(text, "scripts/fetch-pyodide.sh") || !strings.Contains(text, "package-extension.sh") {
			t.Fatalf("the notice does not say how to get Pyodide: %q", text)
		}
	})
}
