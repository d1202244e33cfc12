package viewer

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"runtime"
)

// launcherPattern names the files Launch writes in the data dir.
const launcherPattern = "viewer-open-*.html"

// Launch opens the viewer at link (which holds the token in its fragment)
// in the default browser without putting the token in any process's
// arguments, where every user of the machine can read it (ps,
// /proc/PID/cmdline). It writes an owner-only (0600) HTML file in dir that
// forwards the browser to link, and passes only that file's path to the
// opener. start runs the opener's argv; nil starts the desktop's opener
// without waiting for it. The caller removes the returned file when it
// stops serving; until then the browser may still be about to read it.
func Launch(dir, link string, start func(argv []string) error) (string, error) {
	path, err := writeLauncher(dir, link)
	if err != nil {
		return "", err
	}
	if start == nil {
		start = startDetached
	}
	if err := start(OpenerArgv(runtime.GOOS, path)); err != nil {
		return path, fmt.Errorf("opening %s: %w", path, err)
	}
	return path, nil
}

// writeLauncher writes the forwarding page. CreateTemp makes the file 0600
// under a fresh name, so two viewers of one data dir never share one and
// nobody can have planted a file or link at that name beforehand.
func writeLauncher(dir, link string) (string, error) {
	f, err := os.CreateTemp(dir, launcherPattern)
	if err != nil {
		return "", fmt.Errorf("viewer launcher: %w", err)
	}
	js, _ := json.Marshal(link) // escapes <, > and &, so it cannot end the script
	attr := html.EscapeString(link)
	// location.replace keeps this file out of the tab's history, so Back
	// does not bounce into it; the meta refresh covers a browser without
	// script, and the link a browser that follows neither.
	page := `<!doctype html>
<html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url=` + attr + `">
<title>nmhost viewer</title>
<script>location.replace(` + string(js) + `)</script>
</head><body><p><a href="` + attr + `">Open the nmhost viewer</a></p></body></html>
`
	_, werr := f.WriteString(page)
	cerr := f.Chmod(0o600) // CreateTemp's 0600 already; explicit against odd platforms
	if err := errors.Join(werr, cerr, f.Close()); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("viewer launcher: %w", err)
	}
	return f.Name(), nil
}

// OpenerArgv is the command that opens path with the desktop's default
// handler. The path is one argument, never passed through a shell.
func OpenerArgv(goos, path string) []string {
	switch goos {
	case "darwin":
		return []string{"open", path}
	case "windows":
		return []string{"rundll32", "url.dll,FileProtocolHandler", path}
	}
	return []string{"xdg-open", path}
}

// startDetached starts argv and reaps it in the background: some openers
// return at once, others only when the browser exits.
func startDetached(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	if err := cmd.Start(); err != nil {
		return err
	}
	go cmd.Wait()
	return nil
}
