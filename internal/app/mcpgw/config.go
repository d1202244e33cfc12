package mcpgw

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

// ConfigFile is the gateway's configuration in the data directory.
const ConfigFile = "mcp.json"

// Limits on the configuration.
const (
	maxConfigBytes = 1 << 20
	maxServers     = 64
	maxArgs        = 256
	maxToolRules   = 1024
)

// Config is the person's gateway configuration, in the shape MCP clients
// already use ({"mcpServers": {NAME: {...}}}), so a client's file can be
// copied in. Only the person writes it: no agent, client or tool can add
// a server, and a server is started only because it is listed here.
type Config struct {
	Servers map[string]Server `json:"mcpServers"`
}

// Server is one upstream: a program to start (Command, Args, Env), or an
// address (URL) of a server speaking Streamable HTTP.
type Server struct {
	// Type is optional, as in MCP clients' files: "stdio" with Command,
	// "http" (or "streamable-http") with URL.
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`

	// What this project adds to the shape.

	// Trusted lets the server's tool annotations lower a tool's class as
	// well as raise it (mediator.ClassifyTool).
	Trusted bool `json:"trusted,omitempty"`
	// RecordArguments puts the calls' arguments in the audit trail, not
	// only their hash.
	RecordArguments bool `json:"recordArguments,omitempty"`
	// Tools is the person's own class for some of the server's tools; it
	// comes before everything the server says.
	Tools map[string]mediator.SafetyClass `json:"tools,omitempty"`
	// TimeoutMS bounds each call (default 60 s).
	TimeoutMS int64 `json:"timeoutMs,omitempty"`
}

// LoadConfig reads dir's gateway configuration exactly (names match
// exactly; unknown and repeated members refused). A missing file is an
// empty configuration: the gateway then lists no tool.
func LoadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, ConfigFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Config{}, nil
	}
	if err != nil {
		return Config{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return Config{}, err
	}
	if len(data) > maxConfigBytes {
		return Config{}, mediator.Errorf(mediator.CodeTooLarge, "%s is larger than %d bytes", path, maxConfigBytes)
	}
	return ParseConfig(data)
}

// ParseConfig reads a configuration exactly and checks it.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	if err := mediator.DecodeExact(data, &c); err != nil {
		return Config{}, &mediator.Error{Code: mediator.CodeBadRequest, Msg: "the MCP configuration is not JSON of the expected shape ({\"mcpServers\": {...}}; names match exactly; no unknown or repeated members)", Err: err}
	}
	return c, c.Check()
}

// ValidServerName reports whether s may name a server: letters, digits,
// '_' and '-'. No '.': the gateway lists a tool as SERVER.TOOL, and the
// first '.' must end the server's name.
func ValidServerName(s string) bool {
	return mediator.ValidToolName(s, mediator.MaxToolServerLen) && !strings.Contains(s, ".")
}

// Check validates c: plain server names, exactly one of a command and an
// address each, an address that is https or http on loopback, known
// classes.
func (c Config) Check() error {
	bad := func(format string, args ...any) error {
		return mediator.Errorf(mediator.CodeBadRequest, "MCP configuration: "+format, args...)
	}
	if len(c.Servers) > maxServers {
		return bad("%d servers; the limit is %d", len(c.Servers), maxServers)
	}
	for name, s := range c.Servers {
		if !ValidServerName(name) {
			return bad("server name %q must be 1-%d letters, digits, '_' or '-'", mediator.Truncate(name, 64), mediator.MaxToolServerLen)
		}
		if (s.Command == "") == (s.URL == "") {
			return bad("server %s names exactly one of command and url", name)
		}
		switch {
		case s.Type == "":
		case s.Type == "stdio" && s.Command != "":
		case (s.Type == "http" || s.Type == "streamable-http") && s.URL != "":
		default:
			return bad("server %s: type %q does not go with what it names (stdio with command, http with url)", name, mediator.Truncate(s.Type, 32))
		}
		if len(s.Args) > maxArgs || len(s.Env) > maxArgs || len(s.Tools) > maxToolRules {
			return bad("server %s has more arguments, variables or tool rules than a server may", name)
		}
		if s.URL != "" {
			if err := checkURL(s.URL); err != nil {
				return bad("server %s: %v", name, err)
			}
			if len(s.Env) > 0 || len(s.Args) > 0 {
				return bad("server %s has a url: args and env are for a command", name)
			}
		}
		for tool, class := range s.Tools {
			if !mediator.ValidToolName(tool, mediator.MaxToolNameLen) {
				return bad("server %s: tool name %q is not a plain name", name, mediator.Truncate(tool, 64))
			}
			switch class {
			case mediator.AlwaysSafe, mediator.RequiresConfirmation, mediator.AlwaysConfirm:
			default:
				return bad("server %s: tool %s: class %q must be ALWAYS_SAFE, REQUIRES_CONFIRMATION or ALWAYS_CONFIRM", name, tool, mediator.Truncate(string(class), 32))
			}
		}
		if s.TimeoutMS < 0 || s.TimeoutMS > mediator.MaxTimeoutMS {
			return bad("server %s: timeoutMs must be 0-%d", name, mediator.MaxTimeoutMS)
		}
	}
	return nil
}

// checkURL admits https anywhere and plain http only to a loopback
// address: a tool's arguments and results are not sent in clear text
// across a network.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("url %q is not an absolute http(s) URL without credentials", mediator.Truncate(raw, 128))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("plain http only to a loopback address (127.0.0.0/8, ::1); use https for %s", mediator.Truncate(u.Host, 128))
	}
	return fmt.Errorf("url scheme %q is not http or https", mediator.Truncate(u.Scheme, 16))
}
