package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/agentgate/nmhost/mediator"
)

var wasmMagic = []byte("\x00asm")

// readProfile reads and parses `nmhost run`'s --profile, saying what is
// wrong in terms of the file a person wrote: not JSON (and what it looks
// like instead), the known permissions for an unknown one, the closest
// field name for a misspelt one.
func readProfile(path string) (mediator.Profile, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return mediator.Profile{}, err
	}
	if !json.Valid(raw) {
		what := fmt.Sprintf("it starts with %s", startOf(raw))
		if bytes.HasPrefix(raw, wasmMagic) {
			what = "it is a WebAssembly module; the module goes last: nmhost run --profile PROFILE.json MODULE.wasm"
		}
		return mediator.Profile{}, fmt.Errorf("--profile %s: not JSON: %s", path, what)
	}
	prof, err := mediator.ParseProfile(raw)
	if err == nil {
		return prof, nil
	}
	msg := err.Error()
	if mediator.CodeOf(err) == mediator.CodeUnknownPermission {
		msg += "; known: " + permissionNames()
	}
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && errors.Is(se.Err, jsonv2.ErrUnknownName) {
		name := se.JSONPointer.LastToken()
		where := strings.ReplaceAll(strings.TrimPrefix(string(se.JSONPointer.Parent()), "/"), "/", ".")
		if where == "" {
			where = "the top level"
		}
		msg = fmt.Sprintf("invalid_profile: unknown field %q in %s", name, where)
		if guess := closest(name, jsonFields(se.GoType)); guess != "" {
			msg += fmt.Sprintf("; did you mean %s?", guess)
		} else if fields := jsonFields(se.GoType); len(fields) > 0 {
			msg += "; known: " + strings.Join(fields, ", ")
		}
	}
	return mediator.Profile{}, fmt.Errorf("--profile %s: %s", path, msg)
}

// readModule reads `nmhost run`'s module and refuses what is not one.
func readModule(path string) ([]byte, error) {
	module, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if !bytes.HasPrefix(module, wasmMagic) {
		what := ""
		if json.Valid(module) {
			what = " (JSON: a profile? it goes after --profile)"
		}
		return nil, fmt.Errorf("not a WebAssembly module: %s starts with %s%s", path, startOf(module), what)
	}
	return module, nil
}

// startOf quotes the first bytes of a file, for saying what it is not.
func startOf(b []byte) string {
	if len(b) == 0 {
		return "nothing (it is empty)"
	}
	return fmt.Sprintf("%q", b[:min(len(b), 12)])
}

// jsonFields lists the JSON member names of struct type t.
func jsonFields(t reflect.Type) []string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// closest returns the candidate nearest to name (ignoring case) when it is
// near enough to be what was meant.
func closest(name string, candidates []string) string {
	best, bestD := "", len(name)/3+2
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// linkFix says how to make a refused import link, or "".
func linkFix(prof mediator.Profile, profilePath string, perm mediator.Permission) string {
	switch {
	case perm == "":
		return ""
	case slices.Contains(prof.Permissions.Optional, perm):
		return fmt.Sprintf("grant it: nmhost grant %s %s", prof.AgentID, perm)
	case !prof.Requires(perm):
		return fmt.Sprintf("add %s to permissions.required in %s", perm, profilePath)
	}
	return ""
}
