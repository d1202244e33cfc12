//go:build linux && e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentgate/nmhost/internal/testwasm"
	"github.com/chromedp/cdproto/extensions"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// ExtensionID follows from the public key in extension/manifest.json
// (see extension/README.md).
const ExtensionID = "kfdflodbjjhffjcgfmobmhlinchkhdlj"

// guard is how long a test waits for something that will happen (a
// prompt, a reply, a page): a guard against a hang, never a timing. A
// run's first compile of a Go agent, while the bundled agents compile
// beside it on a loaded two-core machine, has taken 45 s.
const guard = 2 * time.Minute

var (
	nmhostBin string
	dataDir   string
	// chromiumProfile holds the host manifest nmhost install wrote
	// (TestHostOfAnotherProtocolGetsNothing points it elsewhere for a while).
	chromiumProfile string
	artifacts       string
	modules         = map[string][]byte{} // example agents built for wasip1
	browser         context.Context       // the one Chromium of this test binary
)

func TestMain(m *testing.M) {
	code, err := setup(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func setup(m *testing.M) (int, error) {
	// A signal (scripts/test.sh sends SIGTERM when a phase beside these
	// tests fails; Ctrl-C) waits here until Chromium has been set up, then
	// ends the run as the deferred calls would: see stopOnSignal.
	stopped := make(chan os.Signal, 1)
	signal.Notify(stopped, syscall.SIGTERM, os.Interrupt)
	work, err := os.MkdirTemp("", "nmhost-e2e-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(work)
	artifacts = os.Getenv("E2E_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(os.TempDir(), "nmhost-e2e-artifacts")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		return 1, err
	}
	fmt.Fprintf(os.Stderr, "e2e: screenshots go to %s\n", artifacts)
	// Pyodide is vendored by a script, not committed: without it every
	// Python test would fail with a module that cannot load (checked
	// below, where the extension is copied).

	nmhostBin = filepath.Join(work, "nmhost")
	if out, err := exec.Command("go", "build", "-o", nmhostBin, "../cmd/nmhost").CombinedOutput(); err != nil {
		return 1, fmt.Errorf("go build nmhost: %v\n%s", err, out)
	}
	// Chromium loads a copy of extension/ with the example agents that
	// scripts/build-agents.sh bundles, built afresh: the run checks the
	// first-run install of bundled agents and never uses stale modules.
	// E2E_EXTENSION names another directory to copy instead: the package
	// scripts/package-extension.sh builds, unzipped (its agents/ is
	// replaced the same way), so the suite can run against what a person
	// installs.
	src := "../extension"
	if dir := os.Getenv("E2E_EXTENSION"); dir != "" {
		src = dir
	}
	if _, err := os.Stat(filepath.Join(src, "pyodide", "pyodide.mjs")); err != nil {
		return 1, fmt.Errorf("%s/pyodide is missing: run scripts/fetch-pyodide.sh (scripts/test.sh does)", src)
	}
	ext := filepath.Join(work, "extension")
	if err := os.CopyFS(ext, os.DirFS(src)); err != nil {
		return 1, fmt.Errorf("copying the extension: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(ext, "agents")); err != nil {
		return 1, err
	}
	if err := grantClipboard(filepath.Join(ext, "manifest.json")); err != nil {
		return 1, err
	}
	build := exec.Command("bash", "../scripts/build-agents.sh")
	build.Env = append(os.Environ(), "AGENTS_OUT="+filepath.Join(ext, "agents"))
	if out, err := build.CombinedOutput(); err != nil {
		return 1, fmt.Errorf("scripts/build-agents.sh: %v\n%s", err, out)
	}
	for _, name := range []string{"page-reader", "clipboard-note", "fetcher", "notes"} {
		if modules[name], err = os.ReadFile(filepath.Join(ext, "agents", name+".wasm")); err != nil {
			return 1, err
		}
	}
	// The Python examples are bundled as source, stored by its hash.
	for _, name := range []string{"py-word-count", "py-summarise-copy", "py-fetch-json", "py-outside-host", "py-page-outline", "py-sync-fetch"} {
		if modules[name], err = os.ReadFile(filepath.Join(ext, "agents", name+".py")); err != nil {
			return 1, err
		}
	}
	dataDir = filepath.Join(work, "data")
	profile := filepath.Join(work, "chromium-profile")
	chromiumProfile = profile
	install := exec.Command(nmhostBin, "install", "--extension-id", ExtensionID, "--browser", "chromium", "--user-data-dir", profile)
	install.Env = append(os.Environ(), "NMHOST_DATA_DIR="+dataDir)
	if out, err := install.CombinedOutput(); err != nil {
		return 1, fmt.Errorf("nmhost install: %v\n%s", err, out)
	}
	// The hosts' compilation cache (the data dir's wasm-cache) is the one
	// the Go tests share (testwasm.CompileCache), kept between runs: these
	// tests are about the browser, the extension and the host's answers,
	// and compiling the Go agents afresh in every run (the bundled ones at
	// their first-run install, and again per memory limit a test's
	// profile sets) was CPU taken from the suite beside them. Compiling
	// itself, a cache's absence included, is tested in wasmhost and
	// internal/host with caches of their own.
	if err := os.MkdirAll(testwasm.CompileCache(), 0o700); err != nil {
		return 1, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return 1, err
	}
	if err := os.Symlink(testwasm.CompileCache(), filepath.Join(dataDir, "wasm-cache")); err != nil {
		return 1, err
	}
	// An administrator's rules for the extension, as Chrome's enterprise
	// policy sets them: they reach its managed storage, which the
	// extension hands each host process (TestManagedPolicyReachesTheHost).
	removePolicy, err := writeManagedPolicy()
	if err != nil {
		return 1, err
	}
	defer removePolicy()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		return 1, fmt.Errorf("Chromium is not installed (scripts/setup-chromium.sh installs Debian's chromium): %v", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.Flag("disable-extensions", false),
		chromedp.Flag("load-extension", ext),
		chromedp.Flag("disable-extensions-except", ext),
		chromedp.Flag("disable-gpu", true),
		chromedp.WindowSize(1000, 1600), // screenshots show whole pages
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		// Extensions.triggerAction (see grantActiveTab) clicks the toolbar
		// action as a person would; Chromium offers it only to a client on
		// the debugging pipe, which chromedp uses, with this flag.
		chromedp.Flag("enable-unsafe-extension-debugging", true),
		chromedp.Env("NMHOST_DATA_DIR="+dataDir),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	go stopOnSignal(stopped, cancelAlloc, removePolicy, work)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithBrowserOption(chromedp.WithBrowserErrorf(logBrowserError)))
	defer cancel()
	// The first action starts the browser, which lives as long as that
	// action's context: no timeout here.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		return 1, fmt.Errorf("Chromium did not start (%s): %v", chromium, err)
	}
	if err := waitForExtension(ctx); err != nil {
		return 1, err
	}
	browser = ctx
	return m.Run(), nil
}

// logBrowserError logs chromedp's errors but one: tabs attached by id (see
// page) have no frame tree in chromedp, which it reports on every DOM
// update although nothing here uses it.
func logBrowserError(format string, args ...any) {
	if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "no top-level frame") {
		log.Print("chromedp: ", msg)
	}
}

// waitForExtension waits for the extension's service worker.
func waitForExtension(ctx context.Context) error {
	deadline := time.Now().Add(guard)
	for time.Now().Before(deadline) {
		targets, _ := chromedp.Targets(ctx)
		for _, t := range targets {
			if strings.HasPrefix(t.URL, "chrome-extension://"+ExtensionID+"/") {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the extension %s did not load (wrong key, or extensions disabled)", ExtensionID)
}

// page opens url in a new tab; the tab closes with the test. Tabs are
// created with their URL: navigating an existing tab to an extension page
// swaps its renderer, which leaves the automation attached to the old one.
func page(t testing.TB, url string) context.Context {
	t.Helper()
	res, err := chromedp.CallBrowser(browser, target.CreateTarget, target.CreateTargetParams{URL: url})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithTargetID(res.TargetID))
	t.Cleanup(func() {
		chromedp.CallBrowser(browser, target.CloseTarget, target.CloseTargetParams(res))
		cancel()
	})
	var errs []string
	var mu sync.Mutex
	if err := chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			mu.Lock()
			errs = append(errs, fmt.Sprintf("exception %s %v", e.ExceptionDetails.Text, e.ExceptionDetails.Exception))
			mu.Unlock()
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("console.error %s", argsText(e.Args)))
				mu.Unlock()
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	// A new tab holds about:blank before it navigates to url: a check
	// that ran there would pass, and the next evaluation would find its
	// context destroyed by the navigation. So wait for url's document, and
	// retry an evaluation the navigation cut short.
	deadline := time.Now().Add(guard)
	for {
		c, cancelEval := context.WithTimeout(ctx, 10*time.Second)
		ok, err := evalErr[bool](c, `new Promise(r => { const w = () => document.readyState === 'complete' && location.href !== 'about:blank' ? r(true) : setTimeout(w, 20); w() })`)
		cancelEval()
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not load: %v", url, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(url, "chrome-extension://") && len(errs) > 0 {
			t.Errorf("%s logged errors: %v", url, errs)
		}
	})
	return ctx
}

// grantActiveTab clicks the extension's toolbar action on the tab showing
// url, as a person does before running an agent there: Chromium grants the
// extension activeTab on that tab (its URL and title, and scripting into
// the page it shows) until the tab navigates to another origin or closes.
// Extensions.triggerAction is that click, over the debugging pipe. It
// returns the tab's id as the extension knows it, once the grant shows:
// the extension, which has no "tabs" permission, can read the tab's URL.
//
// Headless Chromium opens the action's popup as a window of its own, where
// "the current tab" is not the page; the tests run agents from the same
// popup page opened with ?tab=ID (runInPopup), and close these popups.
func grantActiveTab(t testing.TB, ext context.Context, url string) int {
	t.Helper()
	var tabTarget target.ID
	deadline := time.Now().Add(guard)
	for tabTarget == "" {
		if time.Now().After(deadline) {
			t.Fatalf("no tab shows %s", url)
		}
		res, err := chromedp.CallBrowser(browser, target.GetTargets, target.GetTargetsParams{Filter: target.Filter{{Type: "tab"}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range res.TargetInfos {
			if tg.Type == "tab" && tg.URL == url {
				tabTarget = tg.TargetID
			}
		}
		if tabTarget == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Cleanup(func() { closeActionPopups(t) })
	if _, err := chromedp.CallBrowser(browser, extensions.TriggerAction, extensions.TriggerActionParams{ID: ExtensionID, TargetID: string(tabTarget)}); err != nil {
		t.Fatalf("clicking the action on %s: %v", url, err)
	}
	return eval[int](t, ext, fmt.Sprintf(`new Promise(r => { const w = () => chrome.tabs.query({}).then(ts => { const tab = ts.find(x => x.url === %q); tab ? r(tab.id) : setTimeout(w, 50) }); w() })`, url))
}

// closeActionPopups closes the popups that clicking the action opened (the
// tests' own popup pages carry ?tab=).
func closeActionPopups(t testing.TB) {
	targets, err := chromedp.Targets(browser)
	if err != nil {
		t.Log(err)
		return
	}
	for _, tg := range targets {
		if tg.Type == "page" && tg.URL == extURL("popup.html") {
			chromedp.CallBrowser(browser, target.CloseTarget, target.CloseTargetParams{TargetID: tg.TargetID})
		}
	}
}

func argsText(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if len(a.Value) > 0 {
			parts = append(parts, string(a.Value))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}

func extURL(path string) string { return "chrome-extension://" + ExtensionID + "/" + path }

// eval evaluates a JavaScript expression, awaiting a promise, in ctx's tab.
func eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, guard)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%.200s: %v", expr, err)
	}
	return v
}

// evalErr is eval for goroutines: it returns the error instead of failing.
func evalErr[T any](ctx context.Context, expr string) (T, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
}

// waitFor polls a JavaScript condition in ctx's tab until it is true.
// DOM helpers of chromedp need the frame tree of a tab it created; these
// tabs are attached by id, so plain JavaScript does the querying.
func waitFor(t testing.TB, ctx context.Context, cond string) {
	t.Helper()
	eval[bool](t, ctx, fmt.Sprintf(`new Promise(r => { const w = () => (%s) ? r(true) : setTimeout(w, 50); w() })`, cond))
}

// click clicks the element with the id.
func click(t testing.TB, ctx context.Context, id string) {
	t.Helper()
	waitFor(t, ctx, fmt.Sprintf("document.getElementById(%q)", id))
	eval[bool](t, ctx, fmt.Sprintf("(document.getElementById(%q).click(), true)", id))
}

// screenshot saves the tab as artifacts/name.png.
func screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	// A capture waits for a composited frame, which a window headless
	// Chromium does not draw may never produce: bound it.
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	shot, err := chromedp.Run(c, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot %s: %v", name, err)
		return
	}
	os.WriteFile(filepath.Join(artifacts, name+".png"), shot, 0o644)
}

// reply is the host's reply as the extension's service worker passes it on.
type reply struct {
	Success bool            `json:"success"`
	Data    json.RawMessage `json:"data"`
	Code    string          `json:"code"`
	Error   string          `json:"error"`
}

// hostCall sends a request to the host the way the extension's pages do:
// through the service worker, which owns the native port.
func hostCall(t testing.TB, extPage context.Context, typ string, params map[string]any) reply {
	t.Helper()
	req := map[string]any{"type": typ}
	for k, v := range params {
		req[k] = v
	}
	b, _ := json.Marshal(map[string]any{"type": "host", "request": req})
	return eval[reply](t, extPage, fmt.Sprintf("chrome.runtime.sendMessage(%s)", b))
}

func installAgent(t testing.TB, extPage context.Context, profile map[string]any, module []byte) {
	t.Helper()
	params := map[string]any{"profile": profile}
	if module != nil {
		params["module"] = base64.StdEncoding.EncodeToString(module)
	}
	if r := hostCall(t, extPage, "install-agent", params); !r.Success {
		t.Fatalf("install-agent %v: %s %s", profile["agentId"], r.Code, r.Error)
	}
}

// grantClipboard makes the copy's clipboard permissions required ones:
// the extension asks for them as optional permissions on a person's
// click, and Chrome's own prompt for them is a window the automation
// cannot answer. The copy stands for a browser whose person has granted
// them; notifications stays optional, so TestOptionalPermissionIsAskedFirst
// shows the path where Chrome has not given one.
func grantClipboard(path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	perms, _ := m["permissions"].([]any)
	m["permissions"] = append(perms, "clipboardRead", "clipboardWrite")
	m["optional_permissions"] = []any{"notifications"}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o644)
}
