package export

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// LogsPath is where an OTLP/HTTP receiver takes logs; an endpoint given
// without a path gets it, as OTEL_EXPORTER_OTLP_ENDPOINT does.
const LogsPath = "/v1/logs"

// ParseEndpoint reads the collector's URL as a person gives it. It takes
// http and https only, with a host and no user info (a password in a URL
// ends up in shell histories and process lists) or fragment. Plain http
// carries every decision of the machine in clear text, so it is allowed
// only to a loopback address (127.0.0.0/8, ::1, spelt as an address: a
// name could resolve anywhere) unless unsafeInsecure is set; https may
// go anywhere. A URL without a path (or "/") gets /v1/logs.
func ParseEndpoint(raw string, unsafeInsecure bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL (want http://HOST:PORT or https://HOST:PORT)", raw)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q: the endpoint must be an http or https URL", raw)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("%q carries user info: pass no credentials in the URL", redact(u))
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%q has a fragment", raw)
	}
	if u.Scheme == "http" && !unsafeInsecure && !Loopback(u.Hostname()) {
		return nil, fmt.Errorf("%q: plain http is allowed only to a loopback address (127.0.0.1, [::1]); use https, or --unsafe-insecure to send the audit trail unencrypted", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = LogsPath
	}
	return u, nil
}

// Loopback reports whether host is an address literal in 127.0.0.0/8 or
// ::1 (an IPv4-mapped loopback address too).
func Loopback(host string) bool {
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if err != nil || a.Zone() != "" {
		return false
	}
	return a.Unmap().IsLoopback()
}

func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// hostPort is the endpoint's address, for messages.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port)
}
