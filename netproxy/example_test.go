package netproxy_test

import (
	"fmt"

	"github.com/agentgate/nmhost/netproxy"
)

func ExampleParseEntry() {
	for _, s := range []string{"api.example.com:8443", "*.example.org", "[::1]:8080", "Example.COM.", "127.1", "co.uk"} {
		e, err := netproxy.ParseEntry(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %s host=%s port=%d\n", s, e.Kind, e.Host, e.Port)
	}
	// Output:
	// api.example.com:8443: domain host=api.example.com port=8443
	// *.example.org: wildcard host=example.org port=0
	// [::1]:8080: ip host=::1 port=8080
	// invalid_allowed_host: allowedHosts entry "Example.COM." is not canonical; write "example.com"
	// invalid_allowed_host: allowedHosts entry "127.1" is not canonical; write "127.0.0.1"
	// invalid_allowed_host: allowedHosts entry "co.uk" is a public suffix ("co.uk") and would allow hosts of many unrelated owners; list a site below it, e.g. "example.co.uk"
}

func ExampleACL_Check() {
	acl, err := netproxy.NewACL([]string{"example.com", "127.0.0.1:8080"})
	if err != nil {
		panic(err)
	}
	for _, u := range []string{
		"https://API.Example.com./v1",
		"http://[::ffff:127.0.0.1]:8080/",
		"http://evilexample.com/",
		"http://example.com@evil.test/",
		"http://2130706433:8080/",
		"file:///etc/passwd",
	} {
		t, d := acl.Check(u)
		if d.Allowed {
			fmt.Printf("allow %s -> %s (entry %s, private ok: %v)\n", u, t.URL, t.Entry, t.AllowPrivate)
		} else {
			fmt.Printf("deny  %s: %s\n", u, d.Code)
		}
	}
	// Output:
	// allow https://API.Example.com./v1 -> https://api.example.com/v1 (entry example.com, private ok: false)
	// allow http://[::ffff:127.0.0.1]:8080/ -> http://127.0.0.1:8080/ (entry 127.0.0.1:8080, private ok: true)
	// deny  http://evilexample.com/: host_not_allowed
	// deny  http://example.com@evil.test/: invalid_url
	// deny  http://2130706433:8080/: non_canonical_host
	// deny  file:///etc/passwd: scheme_not_allowed
}
