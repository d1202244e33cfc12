package netproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

func TestParseEntry(t *testing.T) {
	tests := []struct {
		in   string
		want Entry
	}{
		{"example.com", Entry{Kind: EntryDomain, Host: "example.com"}},
		{"api.example.com:8443", Entry{Kind: EntryDomain, Host: "api.example.com", Port: 8443}},
		{"*.example.com", Entry{Kind: EntryWildcard, Host: "example.com"}},
		{"*.example.com:443", Entry{Kind: EntryWildcard, Host: "example.com", Port: 443}},
		{"127.0.0.1", Entry{Kind: EntryIP, Host: "127.0.0.1", Addr: netip.MustParseAddr("127.0.0.1")}},
		{"127.0.0.1:8080", Entry{Kind: EntryIP, Host: "127.0.0.1", Addr: netip.MustParseAddr("127.0.0.1"), Port: 8080}},
		{"[::1]", Entry{Kind: EntryIP, Host: "::1", Addr: netip.IPv6Loopback()}},
		{"::1", Entry{Kind: EntryIP, Host: "::1", Addr: netip.IPv6Loopback()}},
		{"[::1]:8080", Entry{Kind: EntryIP, Host: "::1", Addr: netip.IPv6Loopback(), Port: 8080}},
		{"localhost", Entry{Kind: EntryLocalhost, Host: "localhost"}},
		{"localhost:9000", Entry{Kind: EntryLocalhost, Host: "localhost", Port: 9000}},
		{"xn--bcher-kva.de", Entry{Kind: EntryDomain, Host: "xn--bcher-kva.de"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseEntry(tt.in)
			if err != nil {
				t.Fatalf("ParseEntry(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("ParseEntry(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			c, err := CanonicalEntry(tt.in)
			if err != nil || c != got.String() {
				t.Fatalf("CanonicalEntry(%q) = %q, %v; want %q", tt.in, c, err, got.String())
			}
		})
	}
}

func TestParseEntryRefusals(t *testing.T) {
	tests := []struct {
		in, wantMsg string
	}{
		{"Example.COM.", `allowedHosts entry "Example.COM." is not canonical; write "example.com"`},
		{"127.1", `write "127.0.0.1"`},
		{"0x7f.0.0.1", `write "127.0.0.1"`},
		{"2130706433", `write "127.0.0.1"`},
		{"[::ffff:127.0.0.1]", `write "127.0.0.1"`},
		{"[0:0::1]:80", `write "[::1]:80"`},
		{"*", "would allow every host"},
		{"com", "public suffix"},
		{"co.uk", "public suffix"},
		{"github.io", "public suffix"},
		{"*.github.io", "public suffix"},
		{"https://example.com/", `write "https://example.com"`},
		{"https://example.com/x", "a path is not allowed"},
		{"example.com/x", "a path is not allowed"},
		{"me@example.com", "user information"},
		{"", "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseEntry(tt.in)
			if err == nil {
				t.Fatalf("ParseEntry(%q) accepted", tt.in)
			}
			var me *mediator.Error
			if !errors.As(err, &me) || me.Code != mediator.CodeInvalidAllowedHost {
				t.Fatalf("ParseEntry(%q) error %v is not a *mediator.Error with %s", tt.in, err, mediator.CodeInvalidAllowedHost)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("ParseEntry(%q) error %q does not contain %q", tt.in, err, tt.wantMsg)
			}
		})
	}
}

// TestEntryFixtures runs testdata/entries.txt.
func TestEntryFixtures(t *testing.T) {
	for _, r := range readFixture(t, "entries.txt", true) {
		t.Run(fmt.Sprintf("line%d", r.line), func(t *testing.T) {
			e, perr := ParseEntry(r.quoted)
			c, cerr := CanonicalEntry(r.quoted)
			switch {
			case r.word == "ok":
				if perr != nil || cerr != nil {
					t.Fatalf("%q: ParseEntry err %v, CanonicalEntry err %v; want both to accept", r.quoted, perr, cerr)
				}
				if c != e.String() {
					t.Fatalf("%q: CanonicalEntry %q != Entry.String %q", r.quoted, c, e.String())
				}
			case strings.HasPrefix(r.word, "="):
				want := r.word[1:]
				if cerr != nil || c != want {
					t.Fatalf("CanonicalEntry(%q) = %q, %v; want %q", r.quoted, c, cerr, want)
				}
				if perr == nil {
					t.Fatalf("ParseEntry(%q) accepted a non-canonical entry", r.quoted)
				}
				if mediator.CodeOf(perr) != mediator.CodeInvalidAllowedHost || !strings.Contains(perr.Error(), `write "`+want+`"`) {
					t.Fatalf("ParseEntry(%q) error %q: want %s naming %q", r.quoted, perr, mediator.CodeInvalidAllowedHost, want)
				}
				if _, err := ParseEntry(want); err != nil {
					t.Fatalf("the suggested canonical form %q is refused: %v", want, err)
				}
			case r.word == "invalid":
				if perr == nil || cerr == nil {
					t.Fatalf("%q: ParseEntry err %v, CanonicalEntry (%q) err %v; want both to refuse", r.quoted, perr, c, cerr)
				}
				for _, err := range []error{perr, cerr} {
					if mediator.CodeOf(err) != mediator.CodeInvalidAllowedHost {
						t.Fatalf("%q: code %s, want %s", r.quoted, mediator.CodeOf(err), mediator.CodeInvalidAllowedHost)
					}
					// Every refusal says what would be accepted instead.
					if m := err.Error(); !strings.Contains(m, "e.g.") && !strings.Contains(m, `write "`) && !strings.Contains(m, "list ") {
						t.Fatalf("%q: error %q does not say what would be accepted", r.quoted, m)
					}
				}
			default:
				t.Fatalf("bad want %q", r.word)
			}
		})
	}
}

func TestNewACL(t *testing.T) {
	t.Run("error names the index", func(t *testing.T) {
		_, err := NewACL([]string{"example.com", "Example.org"})
		if mediator.CodeOf(err) != mediator.CodeInvalidAllowedHost || !strings.Contains(err.Error(), "allowedHosts[1]") ||
			!strings.Contains(err.Error(), `write "example.org"`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("duplicates collapse", func(t *testing.T) {
		a, err := NewACL([]string{"example.com", "example.com", "::1", "[::1]"})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(a.Entries()); n != 2 {
			t.Fatalf("%d entries, want 2", n)
		}
	})
	t.Run("too many", func(t *testing.T) {
		hosts := make([]string, MaxEntries+1)
		for i := range hosts {
			hosts[i] = fmt.Sprintf("h%d.example.com", i)
		}
		if _, err := NewACL(hosts); mediator.CodeOf(err) != mediator.CodeInvalidAllowedHost {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("empty allows nothing", func(t *testing.T) {
		a, err := NewACL(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, d := a.Check("http://example.com/"); d.Allowed || d.Code != mediator.CodeHostNotAllowed {
			t.Fatalf("decision %+v", d)
		}
		var nilACL *ACL
		if _, d := nilACL.Check("http://example.com/"); d.Allowed || d.Code != mediator.CodeHostNotAllowed {
			t.Fatalf("nil ACL decision %+v", d)
		}
	})
}

// TestEntryLenFitsProfile: the longest entry ParseEntry accepts passes the
// profile's own length bound, so no valid entry is refused at install for
// its length alone.
func TestEntryLenFitsProfile(t *testing.T) {
	if MaxEntryLen > mediator.MaxAllowedHostLen {
		t.Fatalf("netproxy.MaxEntryLen %d > mediator.MaxAllowedHostLen %d", MaxEntryLen, mediator.MaxAllowedHostLen)
	}
	long := "!https://*." + strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".com:65535"
	if _, err := ParseEntry(long); err != nil {
		t.Fatalf("ParseEntry of a %d-byte entry: %v", len(long), err)
	}
}
