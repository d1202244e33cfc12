package host

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

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

var (
	chromeOrigin = regexp.MustCompile(`^chrome-extension://[a-p]{32}/$`)
	// Firefox add-on ids are email-like or a braced GUID.
	firefoxAddonID = regexp.MustCompile(`^(\{[0-9A-Fa-f-]{36}\}|[A-Za-z0-9._+-]{1,64}@[A-Za-z0-9.-]{1,190})$`)
)

// LooksLikeLaunch reports whether args (without the program name) are a
// browser launching the host rather than a person typing a subcommand.
func LooksLikeLaunch(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "chrome-extension://") {
			return true
		}
	}
	pos := positional(args)
	return len(pos) == 2 && strings.EqualFold(filepath.Ext(pos[0]), ".json")
}

// ParseLaunch reads the caller from the browser's arguments. Chrome passes
// the origin first and may add flags such as --parent-window=N (Windows);
// Firefox passes the manifest's path and the add-on id.
func ParseLaunch(args []string) (Caller, error) {
	for _, a := range args {
		if strings.HasPrefix(a, "chrome-extension://") {
			if !chromeOrigin.MatchString(a) {
				return Caller{}, fmt.Errorf("launch: origin %q is not a chrome-extension origin of 32 letters a-p", clip(a))
			}
			return Caller{Origin: a, Browser: "chromium"}, nil
		}
	}
	pos := positional(args)
	if len(pos) == 2 && strings.EqualFold(filepath.Ext(pos[0]), ".json") {
		if !firefoxAddonID.MatchString(pos[1]) {
			return Caller{}, fmt.Errorf("launch: add-on id %q is not a Firefox add-on id", clip(pos[1]))
		}
		return Caller{Origin: pos[1], Browser: "firefox"}, nil
	}
	return Caller{}, fmt.Errorf("launch: no caller origin among %d arguments", len(args))
}

func positional(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// clip bounds a launch argument quoted in an error.
func clip(s string) string { return mediator.Truncate(s, 80) }
