package host

import (
	"regexp"
	"testing"
)

func TestParseLaunch(t *testing.T) {
	const id = "abcdefghijklmnopabcdefghijklmnop"
	cases := []struct {
		name    string
		args    []string
		launch  bool
		origin  string
		browser string
		wantErr bool
	}{
		{"chrome origin", []string{"chrome-extension://" + id + "/"}, true, "chrome-extension://" + id + "/", "chromium", false},
		{"chrome on windows adds parent window", []string{"chrome-extension://" + id + "/", "--parent-window=6620"}, true, "chrome-extension://" + id + "/", "chromium", false},
		{"firefox manifest and add-on id", []string{"/home/u/.mozilla/native-messaging-hosts/com.agentgate.nmhost.json", "agents@example.org"}, true, "agents@example.org", "firefox", false},
		{"firefox GUID add-on id", []string{"C:\\x\\com.agentgate.nmhost.json", "{01234567-89ab-cdef-0123-456789abcdef}"}, true, "{01234567-89ab-cdef-0123-456789abcdef}", "firefox", false},
		// Hostile or malformed callers: recognised as launches, refused as origins.
		{"origin without trailing slash", []string{"chrome-extension://" + id}, true, "", "", true},
		{"origin with uppercase id", []string{"chrome-extension://ABCDEFGHIJKLMNOPABCDEFGHIJKLMNOP/"}, true, "", "", true},
		{"origin with path", []string{"chrome-extension://" + id + "/../x"}, true, "", "", true},
		{"origin with letters past p", []string{"chrome-extension://" + "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz/"}, true, "", "", true},
		{"id one letter short", []string{"chrome-extension://" + id[1:] + "/"}, true, "", "", true},
		{"id one letter long", []string{"chrome-extension://a" + id + "/"}, true, "", "", true},
		{"newline after the origin", []string{"chrome-extension://" + id + "/\n"}, true, "", "", true},
		{"digit in the id", []string{"chrome-extension://0" + id[1:] + "/"}, true, "", "", true},
		{"firefox id with spaces", []string{"m.json", "a b@c"}, true, "", "", true},
		// Not launches: a person typing a subcommand.
		{"subcommand", []string{"denials", "--json"}, false, "", "", true},
		// Only the first argument makes a launch, so a typo never turns a
		// command into a host waiting on stdin.
		{"origin given to a flag", []string{"install", "--extension-id", "chrome-extension://" + id + "/"}, false, "", "", true},
		{"flag before origin", []string{"--parent-window=0", "chrome-extension://" + id + "/"}, false, "", "", true},
		{"json file of a command", []string{"run", "--profile", "p.json", "m.wasm"}, false, "", "", true},
		{"flag then json", []string{"--x", "m.json", "a@b"}, false, "", "", true},
		{"nothing", nil, false, "", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := LooksLikeLaunch(tc.args); got != tc.launch {
				t.Fatalf("LooksLikeLaunch = %v, want %v", got, tc.launch)
			}
			c, err := ParseLaunch(tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if c.Origin != tc.origin || c.Browser != tc.browser {
				t.Fatalf("caller = %+v", c)
			}
		})
	}
}

// TestChromeOriginIsThePattern: the loop accepts what the documented
// pattern accepts, over every one-byte change of a good origin.
func TestChromeOriginIsThePattern(t *testing.T) {
	pattern := regexp.MustCompile(`^chrome-extension://[a-p]{32}/$`)
	good := "chrome-extension://abcdefghijklmnopabcdefghijklmnop/"
	inputs := []string{good, "", "chrome-extension://", good + "/", good[:len(good)-1]}
	for i := range len(good) {
		for _, b := range []byte{'a', 'p', 'q', 'A', '0', '/', '\n', 0, 0xff} {
			inputs = append(inputs, good[:i]+string(b)+good[i+1:], good[:i]+good[i+1:], good[:i]+string(b)+good[i:])
		}
	}
	for _, s := range inputs {
		if got, want := isChromeOrigin(s), pattern.MatchString(s); got != want {
			t.Errorf("isChromeOrigin(%q) = %v; the pattern says %v", s, got, want)
		}
	}
}
