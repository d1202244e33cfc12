package mcpgw

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/mediator"
)

// SeenFile keeps, per server and tool, the definition the gateway last
// listed, so that a definition that changed while the gateway was not
// running is shown as a change too.
const SeenFile = "mcp-seen.json"

// maxSeenBytes bounds the file: 64 servers of 1,000 tools.
const maxSeenBytes = 32 << 20

// Definition is what an answer about a tool is bound to, as the server
// listed it.
type Definition struct {
	Hash        string          `json:"hash"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// seen is the last definition of each tool, and the one before it when
// it changed, kept in the data directory.
type seen struct {
	path string
	mu   sync.Mutex
	defs map[string]map[string]seenTool // server -> tool
	read bool
}

// seenTool is a tool's definition as last listed, and the one before,
// which every prompt about the tool shows the change from until it
// changes again.
type seenTool struct {
	Now    Definition  `json:"now"`
	Before *Definition `json:"before,omitempty"`
}

func (s *seen) load() {
	if s.read {
		return
	}
	s.read = true
	s.defs = map[string]map[string]seenTool{}
	if s.path == "" {
		return
	}
	f, err := os.Open(s.path)
	if errors.Is(err, fs.ErrNotExist) || err != nil {
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSeenBytes+1))
	if err != nil || len(b) > maxSeenBytes {
		return
	}
	// The gateway's own file; one that does not read is started over
	// (its only use is to show what changed).
	var m map[string]map[string]seenTool
	if json.Unmarshal(b, &m) == nil && m != nil {
		s.defs = m
	}
}

// note records server's listing and returns, for each tool that changed
// since it was first seen, the definition before its last change.
func (s *seen) note(server string, tools []Tool) map[string]Definition {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.load()
	old := s.defs[server]
	now := make(map[string]seenTool, len(tools))
	changed := map[string]Definition{}
	for _, t := range tools {
		d := definitionOf(t)
		st := seenTool{Now: d}
		if prev, ok := old[t.Def.Name]; ok {
			switch {
			case prev.Now.Hash != d.Hash:
				before := prev.Now
				st.Before = &before
			case prev.Before != nil:
				st.Before = prev.Before
			}
		}
		if st.Before != nil {
			changed[t.Def.Name] = *st.Before
		}
		now[t.Def.Name] = st
	}
	s.defs[server] = now
	if s.path != "" {
		if b, err := json.Marshal(s.defs); err == nil && len(b) <= maxSeenBytes {
			_ = datadir.WriteFileAtomic(s.path, b, 0o600)
		}
	}
	return changed
}

func definitionOf(t Tool) Definition {
	schema, _ := json.Marshal(t.Def.InputSchema)
	var ann json.RawMessage
	if t.Def.Annotations != nil {
		ann, _ = json.Marshal(t.Def.Annotations)
	}
	return Definition{Hash: t.Definition, Description: t.Def.Description, InputSchema: schema, Annotations: ann}
}

// Change says what changed from prev to t's definition, field by field,
// for a prompt: "description: was …, now …". Each text is escaped for a
// terminal and cut to a readable length.
func Change(prev Definition, t Tool) string {
	now := definitionOf(t)
	var out []byte
	field := func(name, was, is string) {
		if was == is {
			return
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, name+": was "+quote(was)+", now "+quote(is)...)
	}
	field("description", prev.Description, now.Description)
	field("input schema", string(prev.InputSchema), string(now.InputSchema))
	field("annotations", string(prev.Annotations), string(now.Annotations))
	return string(out)
}

func quote(s string) string {
	if s == "" {
		return "(none)"
	}
	return "«" + mediator.EscapeTerminal(mediator.Truncate(s, 400)) + "»"
}

func seenPath(dir string) string {
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, SeenFile)
}
