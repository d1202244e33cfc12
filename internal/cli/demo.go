package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentgate/nmhost/internal/app"
	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/internal/nmclient"
	"github.com/agentgate/nmhost/manifest"
	"github.com/agentgate/nmhost/mediator"
)

// DemoExtensionID is the extension id the demo launches the host as. It is
// an id of the right shape that no real extension is likely to have.
const DemoExtensionID = "dempdempdempdempdempdempdempdemp"

// emptyModule is the smallest valid WebAssembly binary: magic and version.
var emptyModule = []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}

type demo struct {
	out      io.Writer
	failures int
	// skipped holds the steps not shown, and why; the closing lines say
	// what was shown and what was not.
	skipped map[int]string
}

// demoSteps is how many numbered steps the demo has.
const demoSteps = 8

func runDemo(ctx context.Context, env Env) error {
	var keep bool
	var dir string
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.BoolVar(&keep, "keep", false, "keep the demo's data dir after it ends (it prints where)")
	fs.StringVar(&dir, "data-dir", "", "use the data dir `DIR` (default: a new temporary one)")
	if _, err := parse(specFor("demo"), fs, env); err != nil {
		return err
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "nmhost-demo-")
		if err != nil {
			return err
		}
		dir = d
		if !keep {
			defer os.RemoveAll(dir)
		}
	}
	d := &demo{out: env.Stdout, skipped: map[int]string{}}

	// Two loopback servers: the agent's allowed host, and a canary that
	// counts every request. The demo fails if the canary sees anything.
	var canaryHits atomic.Int64
	canary, canaryURL, err := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		canaryHits.Add(1)
		fmt.Fprintln(w, "canary reached: this must never happen")
	}))
	if err != nil {
		return err
	}
	defer canary.Close()
	big := strings.Repeat("0123456789abcdef", 3<<20/16)
	mux := http.NewServeMux()
	mux.HandleFunc("/news", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"headline":"Agents fetch only what they were allowed to"}`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, big) })
	mux.HandleFunc("/go-elsewhere", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, canaryURL+"/via-redirect", http.StatusFound)
	})
	web, webURL, err := serve(mux)
	if err != nil {
		return err
	}
	defer web.Close()
	webHost := strings.TrimPrefix(webURL, "http://")

	origin := "chrome-extension://" + DemoExtensionID + "/"
	cfg := datadir.Config{
		AllowedOrigins: []string{origin},
		// A name that "resolves" to a private address, answered locally so
		// the demo sends nothing to any DNS server.
		StaticHosts: map[string][]string{"intranet.demo.test": {"10.20.30.40"}},
	}
	if err := datadir.SaveConfig(dir, cfg); err != nil {
		return err
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	hostEnv := append(os.Environ(), datadir.EnvVar+"="+dir)

	d.say("nmhost demo: the native-messaging host at work, driven the way Chrome drives it")
	d.say("  data dir  %s%s", dir, map[bool]string{true: " (kept)", false: " (removed at exit; --keep keeps it)"}[keep])
	d.say("  web       %s  (the agent's allowed host)", webURL)
	d.say("  canary    %s  (counts every request it gets; must stay at 0)", canaryURL)
	d.say("")

	p, err := nmclient.Start(bin, []string{origin}, hostEnv, io.Discard)
	if err != nil {
		return err
	}
	defer p.Wait()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	var hello struct {
		Version  string `json:"version"`
		Protocol int    `json:"protocol"`
	}
	if err := d.call(ctx, p.Client, "hello", nil, &hello); err != nil {
		return err
	}
	d.say("1. started `nmhost %s` over pipes, as the browser does: version %s, protocol %d", origin, hello.Version, hello.Protocol)

	profile := map[string]any{
		"agentId": "demo-reader",
		"name":    "Demo news reader",
		// Its fetches come through network-fetch, not its (empty) module,
		// so the module says nothing of the set it needs: the profile
		// names it, and the set bounds the grants.
		"permissionSet": "network-api",
		"permissions":   map[string]any{"required": []string{"network.fetch", "console.log"}},
		"capabilities": map[string]any{
			"networkAccess":    true,
			"allowedHosts":     []string{webHost, "intranet.demo.test"},
			"executionTimeout": 5000,
			"domAccess":        "read-only",
		},
	}
	var rec mediator.AgentRecord
	if err := d.call(ctx, p.Client, "install-agent", map[string]any{
		"profile": profile, "module": base64.StdEncoding.EncodeToString(emptyModule),
	}, &rec); err != nil {
		return err
	}
	d.say("2. install-agent demo-reader: permission set %s (%s); granted %v; allowedHosts %v; module sha256 %.12s...",
		rec.Profile.PermissionSet, rec.Profile.PermissionSource, grantNames(rec), rec.Profile.Capabilities.AllowedHosts, rec.ModuleSHA256)

	d.say("3. network-fetch, each checked against the ACL before anything leaves the host:")
	d.fetch(ctx, p.Client, "demo-reader", webURL+"/news", "", "the allowed host")
	d.fetch(ctx, p.Client, "demo-reader", webURL+"/big", "", "3 MiB: more than one 1 MiB message")
	d.fetch(ctx, p.Client, "demo-reader", canaryURL+"/steal", "host_not_allowed", "another host: same IP, other port")
	d.fetch(ctx, p.Client, "demo-reader", webURL+"/go-elsewhere", "host_not_allowed", "allowed host redirecting to the canary")
	d.fetch(ctx, p.Client, "demo-reader", "http://intranet.demo.test/admin", "private_address", "allowed name resolving to 10.20.30.40")
	d.fetch(ctx, p.Client, "demo-reader", "http://169.254.169.254/latest/meta-data/", "host_not_allowed", "cloud metadata address")
	d.fetch(ctx, p.Client, "demo-reader", "http://2130706433/", "non_canonical_host", "127.0.0.1 spelt as one number")
	d.fetch(ctx, p.Client, "demo-reader", "http://"+webHost+"@evil.test/", "invalid_url", "userinfo trick")
	d.fetch(ctx, p.Client, "demo-reader", "file:///etc/passwd", "scheme_not_allowed", "not http(s)")

	d.say("4. grants are checked on every call:")
	if err := d.call(ctx, p.Client, "revoke", map[string]any{"agentId": "demo-reader", "permission": "network.fetch"}, nil); err != nil {
		return err
	}
	d.say("   revoke network.fetch")
	d.fetch(ctx, p.Client, "demo-reader", webURL+"/news", "revoked_by_user", "after revoke")
	if err := d.call(ctx, p.Client, "grant", map[string]any{"agentId": "demo-reader", "permission": "network.fetch"}, nil); err != nil {
		return err
	}
	d.say("   grant network.fetch")
	d.fetch(ctx, p.Client, "demo-reader", webURL+"/news", "", "after grant")

	offline := map[string]any{
		"agentId":      "demo-offline",
		"permissions":  map[string]any{"required": []string{"network.fetch"}},
		"capabilities": map[string]any{"networkAccess": false, "allowedHosts": []string{webHost}},
	}
	if err := d.call(ctx, p.Client, "install-agent", map[string]any{"profile": offline}, nil); err != nil {
		return err
	}
	d.fetch(ctx, p.Client, "demo-offline", webURL+"/news", "network_disabled", "agent whose profile has networkAccess: false")
	d.fetch(ctx, p.Client, "no-such-agent", webURL+"/news", "unknown_agent", "agent that was never installed")

	if err := d.policySteps(ctx, p.Client, webURL); err != nil {
		return err
	}
	if err := d.agentSteps(ctx, p.Client, dir, webURL, webHost, canaryURL); err != nil {
		return err
	}

	d.say("7. a caller the host was not installed for gets nothing but refusals:")
	stranger, err := nmclient.Start(bin, []string{"chrome-extension://" + strings.Repeat("p", 32) + "/"}, hostEnv, io.Discard)
	if err != nil {
		return err
	}
	r, err := stranger.Call(ctx, "list-agents", nil)
	stranger.Wait()
	if err != nil {
		return err
	}
	d.expect(r, "origin_not_allowed", "   list-agents from chrome-extension://pppp.../")

	var page app.DenialPage
	if err := d.call(ctx, p.Client, "list-denials", map[string]any{"limit": 100}, &page); err != nil {
		return err
	}
	d.say("")
	d.say("8. the denial log (list-denials; also `NMHOST_DATA_DIR=%s nmhost denials`):", dir)
	pr := newDenialPrinter(env.Stdout, false)
	for i := len(page.Denials) - 1; i >= 0; i-- {
		pr.print(page.Denials[i])
	}
	pr.flush()
	d.say("")
	d.say("canary hits: %d", canaryHits.Load())
	if canaryHits.Load() != 0 {
		d.failures++
	}
	if d.failures > 0 {
		return fmt.Errorf("%d step(s) did not turn out as expected", d.failures)
	}
	if len(d.skipped) == 0 {
		d.say("every step turned out as expected.")
	} else {
		var shown, skipped []string
		for i := 1; i <= demoSteps; i++ {
			if why, ok := d.skipped[i]; ok {
				skipped = append(skipped, fmt.Sprintf("step %d (%s)", i, why))
			} else {
				shown = append(shown, fmt.Sprint(i))
			}
		}
		d.say("steps %s turned out as expected; skipped %s.", strings.Join(shown, ", "), strings.Join(skipped, "; "))
	}
	d.say("Next: build the host where it stays, then install it for your extension:")
	d.say("  %s", manifest.BuildLine)
	d.say("  ~/.local/bin/nmhost install --extension-id <your extension id>")
	if keep {
		d.say("browse this demo's denial log live: %s=%s nmhost serve --open", datadir.EnvVar, dir)
	}
	return nil
}

// policySteps shows the safety classes: a POST needs the user's
// confirmation; the demo plays the extension and answers "always allow".
func (d *demo) policySteps(ctx context.Context, c *nmclient.Client, webURL string) error {
	d.say("5. operations that change something ask the user first (the demo answers as the extension would):")
	var prompts atomic.Int64
	c.SetHostHandler(func(typ string, msg json.RawMessage) map[string]any {
		var m struct {
			Operation, Class string
			Target           struct{ Method, URL string }
		}
		json.Unmarshal(msg, &m)
		prompts.Add(1)
		d.say("   prompt: %s %s %s (%s) -> always-allow", m.Operation, m.Target.Method, m.Target.URL, m.Class)
		return map[string]any{"answer": "always-allow"}
	})
	post := map[string]any{"agentId": "demo-reader", "url": webURL + "/news", "options": map[string]any{"method": "POST", "body": "hi"}}
	for i := 1; i <= 2; i++ {
		r, err := c.Call(ctx, "network-fetch", post)
		if err != nil {
			return err
		}
		if !r.Success {
			d.say("   POST %s/news (call %d)\n      FAIL: %s %s", webURL, i, r.Code, r.Error)
			d.failures++
			continue
		}
		d.say("   POST %s/news (call %d)\n      ALLOW", webURL, i)
	}
	if prompts.Load() != 1 {
		d.say("   FAILED: %d prompts; the remembered answer should have decided the second call", prompts.Load())
		d.failures++
	} else {
		d.say("   one prompt for two calls: the second was decided by the remembered answer (nmhost prefs list)")
	}
	return nil
}

// agentSteps runs a real WebAssembly agent, built from examples/agents.
func (d *demo) agentSteps(ctx context.Context, c *nmclient.Client, dir, webURL, webHost, canaryURL string) error {
	d.say("6. a WebAssembly agent (examples/agents/fetcher), linked only against what it was granted:")
	src := filepath.Join("examples", "agents", "fetcher")
	if _, err := os.Stat(src); err != nil {
		d.skip(6, "not run from the repository root, where %s is", filepath.ToSlash(src))
		return nil
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		d.skip(6, "building %s to WebAssembly needs Go, and go is not on PATH", filepath.ToSlash(src))
		return nil
	}
	wasm := filepath.Join(dir, "fetcher.wasm")
	build := exec.CommandContext(ctx, goBin, "build", "-o", wasm, "./"+filepath.ToSlash(src))
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", src, err, out)
	}
	module, err := os.ReadFile(wasm)
	if err != nil {
		return err
	}
	for _, agent := range []struct {
		id    string
		perms []string
		want  string
	}{
		{"demo-fetcher", []string{"network.fetch"}, "ok"},
		{"demo-fetcher-ungranted", []string{}, "import_not_granted"},
	} {
		profile := map[string]any{
			"agentId": agent.id, "permissions": map[string]any{"required": agent.perms},
			"capabilities": map[string]any{"networkAccess": true, "allowedHosts": []string{webHost}, "maxMemory": 33554432, "executionTimeout": 20000},
		}
		if err := d.call(ctx, c, "install-agent", map[string]any{"profile": profile, "module": base64.StdEncoding.EncodeToString(module)}, nil); err != nil {
			return err
		}
		var res struct {
			Status, Output, Error string
			Calls                 int
			DurationMs            int64
		}
		if err := d.call(ctx, c, "run-agent", map[string]any{"agentId": agent.id, "input": webURL + "/news\n" + canaryURL + "/steal"}, &res); err != nil {
			return err
		}
		d.say("   run-agent %s (granted %v): %s in %d ms", agent.id, agent.perms, res.Status, res.DurationMs)
		for _, line := range strings.Split(strings.TrimSpace(res.Output), "\n") {
			if line != "" {
				d.say("     | %s", line)
			}
		}
		if res.Error != "" {
			d.say("     %s", res.Error)
		}
		if res.Status != agent.want {
			d.say("   FAILED: want %s", agent.want)
			d.failures++
		}
	}
	return nil
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

// skip records that a step was not shown, says so where it would have
// been, and lets the demo go on.
func (d *demo) skip(step int, format string, args ...any) {
	why := fmt.Sprintf(format, args...)
	d.skipped[step] = why
	d.say("   skipped: %s", why)
}

func (d *demo) call(ctx context.Context, c *nmclient.Client, typ string, params, out any) error {
	r, err := c.Call(ctx, typ, params)
	if err != nil {
		return err
	}
	if err := r.Decode(out); err != nil {
		return fmt.Errorf("%s: %w", typ, err)
	}
	return nil
}

// fetch asks the host to fetch url for agent and prints the outcome; want
// is the expected reason code, or "" when the fetch should succeed.
func (d *demo) fetch(ctx context.Context, c *nmclient.Client, agent, url string, want mediator.Code, what string) {
	r, err := c.Call(ctx, "network-fetch", map[string]any{"agentId": agent, "url": url})
	if err != nil {
		d.say("   FAIL  %s: %v", url, err)
		d.failures++
		return
	}
	label := fmt.Sprintf("   %-60s %s", url, "("+what+")")
	if want != "" {
		d.expect(r, want, label)
		return
	}
	var data struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	}
	if err := r.Decode(&data); err != nil {
		d.say("%s\n      FAIL: expected success, got %v", label, err)
		d.failures++
		return
	}
	body := data.Body
	if len(body) > 60 {
		body = body[:40] + "..."
	}
	chunks := ""
	if r.Frames > 1 {
		chunks = fmt.Sprintf(" in %d chunked frames", r.Frames)
	}
	d.say("%s\n      ALLOW %d, %d bytes%s: %s", label, data.Status, len(data.Body), chunks, body)
}

func (d *demo) expect(r nmclient.Reply, want mediator.Code, label string) {
	if r.Success || r.Code != string(want) {
		d.say("%s\n      FAIL: expected %s, got success=%v code=%q %s", label, want, r.Success, r.Code, r.Error)
		d.failures++
		return
	}
	d.say("%s\n      DENY  %s: %s", label, r.Code, r.Error)
}

func grantNames(rec mediator.AgentRecord) []string {
	var out []string
	for _, g := range rec.Grants {
		out = append(out, string(g.Permission))
	}
	return out
}

func serve(h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String(), nil
}
