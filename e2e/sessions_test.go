//go:build linux && e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/internal/store"
)

// runHere runs agent with input from an open popup, in the session the
// popup shows, and returns once the run is over: its status, output and
// the session the reply named.
func runHere(t testing.TB, popup context.Context, agent, input string) (status, output, session string) {
	t.Helper()
	waitFor(t, popup, fmt.Sprintf(`document.querySelector('#agent option[value=%q]')`, agent))
	eval[bool](t, popup, fmt.Sprintf(`(delete document.getElementById('output').dataset.status,
		document.getElementById('agent').value = %q, document.getElementById('input').value = %q, true)`, agent, input))
	click(t, popup, "run")
	waitFor(t, popup, `document.getElementById('output').dataset.status`)
	return eval[string](t, popup, `document.getElementById('output').dataset.status`),
		eval[string](t, popup, `document.getElementById('output').textContent`),
		eval[string](t, popup, `document.getElementById('output').dataset.session`)
}

// shownSession is the session the popup shows as current, once it shows
// one ("" until then).
func shownSession(t testing.TB, popup context.Context, want string) {
	t.Helper()
	waitFor(t, popup, fmt.Sprintf(`document.getElementById('session-current').dataset.session === %q`, want))
}

// TestSessionWorkspacesFromThePopup: the bundled notes agent, run from
// the popup in a session the person started there, writes a file in the
// session's workspace; a second run in that session reads it back; a run
// in a new session started in the popup does not see it; picking the
// first session again in the popup finds it again, and the popup keeps
// the pick.
func TestSessionWorkspacesFromThePopup(t *testing.T) {
	ext := page(t, extURL("options.html"))
	// The notes agent comes with the extension, installed by a person's
	// confirmation on its sheet.
	installExamples(t, "notes")
	_, tabID := openTestPage(t, ext)
	popup := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))

	// Start a session with a name no file system would take as one.
	const first = "e2e notes/1 ../日記"
	waitFor(t, popup, `document.getElementById('session-current').dataset.session !== undefined`)
	eval[bool](t, popup, fmt.Sprintf(`(document.getElementById('session-name').value = %q, true)`, first))
	click(t, popup, "session-new")
	shownSession(t, popup, first)
	screenshot(t, popup, "popup-session")

	status, out, session := runHere(t, popup, "notes", "write hello.txt from the first session")
	if status != "ok" || session != first || !strings.Contains(out, "wrote hello.txt") {
		t.Fatalf("write in %q: %s %q:\n%s", first, status, session, out)
	}
	onDisk := filepath.Join(dataDir, "session-workspaces", store.WorkspaceDirName(first), "notes", "hello.txt")
	if b, err := os.ReadFile(onDisk); err != nil || string(b) != "from the first session" {
		t.Fatalf("the note in the session's workspace: %q %v", b, err)
	}
	status, out, _ = runHere(t, popup, "notes", "read hello.txt")
	if status != "ok" || !strings.Contains(out, "hello.txt: from the first session") {
		t.Fatalf("read in the same session: %s:\n%s", status, out)
	}

	// A new session (the host names it), medium, with its own workspace.
	click(t, popup, "session-new")
	waitFor(t, popup, `document.getElementById('session-current').dataset.session.startsWith('run-')`)
	second := eval[string](t, popup, `document.getElementById('session-current').dataset.session`)
	if shown := eval[string](t, popup, `document.getElementById('session-current').textContent`); !strings.Contains(shown, "(medium)") {
		t.Fatalf("a new session shows as %q; want medium", shown)
	}
	status, out, session = runHere(t, popup, "notes", "read hello.txt")
	if status != "exit_nonzero" || session != second || !strings.Contains(out, "no such note") {
		t.Fatalf("read in another session %q: %s %q:\n%s", second, status, session, out)
	}
	status, out, _ = runHere(t, popup, "notes", "list")
	if status != "ok" || !strings.Contains(out, "0 notes") {
		t.Fatalf("list in another session: %s:\n%s", status, out)
	}

	// Pick the first one again: its note is there, and the pick is kept
	// for the next popup.
	eval[bool](t, popup, fmt.Sprintf(`(document.getElementById('session').value = %q,
		document.getElementById('session').dispatchEvent(new Event('change')), true)`, first))
	shownSession(t, popup, first)
	status, out, session = runHere(t, popup, "notes", "read hello.txt")
	if status != "ok" || session != first || !strings.Contains(out, "hello.txt: from the first session") {
		t.Fatalf("read after picking %q again: %s %q:\n%s", first, status, session, out)
	}
	again := page(t, extURL(fmt.Sprintf("popup.html?tab=%d", tabID)))
	shownSession(t, again, first)
}
