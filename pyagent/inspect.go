package pyagent

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentgate/nmhost/mediator"
)

// MaxSourceBytes bounds a Python agent's source: far more than an agent
// needs, small enough to travel in one install-agent frame as text.
const MaxSourceBytes = 1 << 20

// Confidence levels of an inference from Python source. Both stay below a
// module's 1.0: Python reaches names at run time in ways no reading of
// the text settles. docs/python.md explains them.
const (
	// ConfidencePlain: every use of restricted_api is a plain attribute
	// reference, restricted_api.NAME, so the names read are the names used.
	ConfidencePlain = 0.8
	// ConfidenceDynamic: the code also reaches names dynamically (getattr,
	// eval, exec, __import__, ...) or passes restricted_api around, so a
	// name may be used that the text does not show; below the threshold,
	// so the agent runs under minimal unless its profile names a set.
	ConfidenceDynamic = 0.5
)

// Inspection is what a Python agent's source says about the set it needs.
type Inspection struct {
	// Uses lists each restricted_api name the source references, once,
	// in the order of first use.
	Uses []Use `json:"uses"`
	// Dynamic lists the constructs that reach names at run time.
	Dynamic []string `json:"dynamic,omitempty"`
	mediator.SetInference
}

// Use is one restricted_api name the source references.
type Use struct {
	Name       string              `json:"name"`
	Permission mediator.Permission `json:"permission,omitempty"` // empty: no such function
	Line       int                 `json:"line"`
}

// The patterns are compiled on first use, not at package init: host mode
// starts for every message, and most starts inspect no Python.
var (
	attrRef = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\brestricted_api\s*\.\s*([A-Za-z_][A-Za-z0-9_]*)`)
	})
	anyRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\brestricted_api\b`) })
	// dynamicAccess are the ways Python code reaches a name the text does
	// not spell: attribute access by string, code from strings, imports
	// by name, namespaces as dictionaries, and the bridge to JavaScript.
	dynamicAccess = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(getattr|setattr|delattr|hasattr|eval|exec|compile|__import__|globals|locals|vars)\s*\(|\bimportlib\b|__dict__|__getattribute__|__builtins__|\bimport\s+js\b|\bfrom\s+js\b|\bpyodide\b`)
	})
)

// ValidSource checks what install needs of a Python agent's code: UTF-8
// text of at most MaxSourceBytes with no NUL, and not a WebAssembly
// module sent under the wrong runtime.
func ValidSource(src []byte) error {
	switch {
	case len(src) == 0:
		return mediator.Errorf(mediator.CodeBadRequest, "a Python agent's module is its source, and it is empty")
	case len(src) > MaxSourceBytes:
		return mediator.Errorf(mediator.CodeTooLarge, "the Python source is larger than %d bytes", MaxSourceBytes)
	case bytes.HasPrefix(src, []byte("\x00asm")):
		return mediator.Errorf(mediator.CodeBadRequest, "the profile says runtime python but the module is WebAssembly")
	case !utf8.Valid(src) || bytes.IndexByte(src, 0) >= 0:
		return mediator.Errorf(mediator.CodeBadRequest, "a Python agent's module must be UTF-8 source text without NUL bytes")
	}
	return nil
}

// Inspect reads a Python agent's source. Comment lines are skipped; the
// set named is the smallest that covers the known names used, so a
// misreading can only cost the agent rights, never give it more than its
// profile's grants (which the host checks on every call anyway).
func Inspect(src []byte) (Inspection, error) {
	if err := ValidSource(src); err != nil {
		return Inspection{}, err
	}
	in := Inspection{Uses: []Use{}}
	var perms []mediator.Permission
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		attrs := attrRef().FindAllStringSubmatchIndex(line, -1)
		for _, m := range attrs {
			name := line[m[2]:m[3]]
			if slices.ContainsFunc(in.Uses, func(u Use) bool { return u.Name == name }) {
				continue
			}
			u := Use{Name: name, Line: i + 1}
			if f, ok := Lookup(name); ok {
				u.Permission = f.Permission
				perms = append(perms, f.Permission)
			}
			in.Uses = append(in.Uses, u)
		}
		// restricted_api named without a .NAME after it is passed around.
		if len(anyRef().FindAllStringIndex(line, -1)) > len(attrs) {
			in.Dynamic = appendOnce(in.Dynamic, "restricted_api used as a value")
		}
		for _, m := range dynamicAccess().FindAllString(line, -1) {
			in.Dynamic = appendOnce(in.Dynamic, strings.TrimRight(strings.Join(strings.Fields(m), " "), "( "))
		}
	}
	in.Set = mediator.SmallestSet(perms)
	in.Confidence = ConfidencePlain
	in.Reasons = []string{}
	if len(in.Dynamic) > 0 {
		in.Confidence = ConfidenceDynamic
		in.Reasons = append(in.Reasons, "the code reaches names dynamically ("+strings.Join(in.Dynamic, ", ")+"): a name it uses may not appear in the text")
	} else {
		in.Reasons = append(in.Reasons, "every use of restricted_api is a plain attribute reference; Python could still reach a name at run time")
	}
	for _, u := range in.Uses {
		if u.Permission == "" {
			in.Reasons = append(in.Reasons, "restricted_api."+u.Name+" is no restricted_api function: it raises AttributeError")
		}
	}
	in.Pure = len(in.Dynamic) == 0 && !slices.ContainsFunc(perms, func(p mediator.Permission) bool { return p != mediator.PermConsoleLog })
	return in, nil
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
