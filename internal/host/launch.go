package host

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/agentgate/nmhost/mediator"
)

// Caller is who launched the host, from the browser's command line.
type Caller struct {
	// Origin is "chrome-extension://ID/" for the Chromium family and the
	// add-on id for Firefox. It is what the allowed-origins list holds.
	Origin string
	// Browser is "chromium" or "firefox".
	Browser string
}

// Firefox add-on ids are email-like or a braced GUID.
var firefoxAddonID = lazyRegexp(`^(\{[0-9A-Fa-f-]{36}\}|[A-Za-z0-9._+-]{1,64}@[A-Za-z0-9.-]{1,190})$`)

// isChromeOrigin reports whether s is chrome-extension://ID/ with an ID of
// 32 letters a-p. It is a loop, not a pattern: every process Chrome starts
// checks its origin before its first frame, and compiling the pattern cost
// each of them about 0.07 ms, a hundredth of its start.
func isChromeOrigin(s string) bool {
	const prefix = "chrome-extension://"
	id, ok := strings.CutPrefix(s, prefix)
	if !ok || len(id) != 33 || id[32] != '/' {
		return false
	}
	for i := range 32 {
		if id[i] < 'a' || id[i] > 'p' {
			return false
		}
	}
	return true
}

// LooksLikeLaunch reports whether args (without the program name) are a
// browser launching the host rather than a person typing a subcommand.
// Only the first argument decides: Chrome passes the caller's origin first
// (and on Windows a --parent-window=N after it); Firefox passes exactly the
// manifest's path and the add-on id. An origin anywhere else, such as
// `nmhost install --extension-id chrome-extension://ID/`, is a person's
// typo, and must not turn a command into a host waiting on stdin.
func LooksLikeLaunch(args []string) bool {
	if len(args) == 0 {
		return false
	}
	if strings.HasPrefix(args[0], "chrome-extension://") {
		return true
	}
	return firefoxLaunch(args)
}

func firefoxLaunch(args []string) bool {
	return len(args) == 2 && !strings.HasPrefix(args[0], "-") && strings.EqualFold(filepath.Ext(args[0]), ".json")
}

// ParseLaunch reads the caller from the browser's arguments, in the shapes
// LooksLikeLaunch accepts.
func ParseLaunch(args []string) (Caller, error) {
	switch {
	case len(args) > 0 && strings.HasPrefix(args[0], "chrome-extension://"):
		if !isChromeOrigin(args[0]) {
			return Caller{}, fmt.Errorf("launch: origin %q is not a chrome-extension origin of 32 letters a-p", clip(args[0]))
		}
		return Caller{Origin: args[0], Browser: "chromium"}, nil
	case firefoxLaunch(args):
		if !firefoxAddonID().MatchString(args[1]) {
			return Caller{}, fmt.Errorf("launch: add-on id %q is not a Firefox add-on id", clip(args[1]))
		}
		return Caller{Origin: args[1], Browser: "firefox"}, nil
	}
	return Caller{}, fmt.Errorf("launch: no caller origin first among %d arguments", len(args))
}

// clip bounds a launch argument quoted in an error.
func clip(s string) string { return mediator.Truncate(s, 80) }

// lazyRegexp compiles expr on first use, not at package init: every
// command of the binary runs every package's init, and a host started for
// one message should not pay for patterns it never matches.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
