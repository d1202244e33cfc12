package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

var mcpServers = sync.OnceValues(func() (string, error) {
	if d := os.Getenv("NMHOST_MCP_SERVERS"); d != "" {
		return d, nil
	}
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "scripts", "mcp-servers.sh")
	out, err := exec.Command(script).Output()
	return strings.TrimSpace(string(out)), err
})

// MCPServer is the command of an MCP reference server (its npm bin
// name, such as "mcp-server-filesystem"), from where
// scripts/mcp-servers.sh installed them (NMHOST_MCP_SERVERS, set by
// scripts/test.sh, or the script is run now).
func MCPServer(tb testing.TB, bin string) string {
	tb.Helper()
	dir, err := mcpServers()
	if err != nil {
		tb.Fatalf("scripts/mcp-servers.sh: %v", err)
	}
	return filepath.Join(dir, "node_modules", ".bin", bin)
}
