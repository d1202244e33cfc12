package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestHostileNames (issue 22, finding 13): names holding a control
// character, a bidirectional control or invalid UTF-8 are refused by
// every path that makes or reads a name, and nothing is created; honest
// names in other scripts are fine.
func TestHostileNames(t *testing.T) {
	w, dir, canary := setup(t, Limits{})
	w.WriteFile("ok.txt", []byte("x"), false)
	for _, tc := range []struct {
		test, name string
		ok         bool
	}{
		{"escape", "a\x1b[2Jb.txt", false},
		{"carriage return", "a\rb.txt", false},
		{"newline", "a\nb.txt", false},
		{"tab", "a\tb.txt", false},
		{"bell", "a\ab", false},
		{"del", "a\x7fb", false},
		{"c1 next line", "a\u0085b", false},
		{"c1 csi", "a\u009b2Jb", false},
		{"rlo", "invoice\u202etxt.exe", false},
		{"lre", "a\u202ab", false},
		{"pdf", "a\u202cb", false},
		{"lri", "a\u2066b", false},
		{"pdi", "a\u2069b", false},
		{"lrm", "a\u200eb", false},
		{"rlm", "a\u200fb", false},
		{"alm", "a\u061cb", false},
		{"invalid utf-8", "a\xffb", false},
		{"raw c1 byte", "a\x9bb", false},
		{"half a rune", "a\xe6\x97", false},
		{"in a directory part", "d\x1b/f.txt", false},
		{"accents", "café.txt", true},
		{"cjk", "日本語.txt", true},
		{"arabic letters", "ملف.txt", true},
		{"emoji", "note-🙂.md", true},
	} {
		t.Run(tc.test, func(t *testing.T) {
			_, err := Clean(tc.name)
			if tc.ok {
				if err != nil {
					t.Fatalf("Clean refused an honest name: %v", err)
				}
				return
			}
			if mediator.CodeOf(err) != mediator.CodePathNotAllowed {
				t.Fatalf("Clean: %v; want path_not_allowed", err)
			}
			for op, do := range map[string]func() error{
				"write":     func() error { return w.WriteFile(tc.name, []byte("x"), false) },
				"append":    func() error { return w.WriteFile(tc.name, []byte("x"), true) },
				"mkdir":     func() error { return w.Mkdir(tc.name, false) },
				"mkdir -p":  func() error { return w.Mkdir(tc.name+"/sub", true) },
				"rename to": func() error { return w.Rename("ok.txt", tc.name) },
				"read":      func() error { _, err := w.ReadFile(tc.name, 0); return err },
			} {
				if err := do(); mediator.CodeOf(err) != mediator.CodePathNotAllowed {
					t.Errorf("%s: %v; want path_not_allowed", op, err)
				}
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 || ents[0].Name() != "ok.txt" {
				t.Errorf("the workspace holds %v", ents)
			}
			untouched(t, canary)
		})
	}
}

// TestDepthBound (issue 22, finding 6): nothing is created deeper than
// MaxDepth levels, whether by mkdir -p, mkdir, a new file, or a rename of
// a file or of a directory whose own depth would take it past the bound;
// and repeated mkdir plus mv, the attack that nested thousands of levels,
// stops at the bound.
func TestDepthBound(t *testing.T) {
	w, dir, canary := setup(t, Limits{})
	deep := func(n int) string { return strings.TrimSuffix(strings.Repeat("d/", n), "/") }
	if err := w.Mkdir(deep(MaxDepth), true); err != nil {
		t.Fatalf("mkdir -p %d levels: %v", MaxDepth, err)
	}
	w.Mkdir("m/n", true)
	w.WriteFile("f", nil, false)
	for _, tc := range []struct {
		name string
		do   func() error
		code mediator.Code
	}{
		{"mkdir -p 65", func() error { return w.Mkdir(deep(MaxDepth+1), true) }, mediator.CodePathNotAllowed},
		{"mkdir -p 65 elsewhere", func() error { return w.Mkdir("e/"+deep(MaxDepth), true) }, mediator.CodePathNotAllowed},
		{"mkdir 65", func() error { return w.Mkdir(deep(MaxDepth)+"/x", false) }, mediator.CodePathNotAllowed},
		{"file at 65", func() error { return w.WriteFile(deep(MaxDepth)+"/x", nil, false) }, mediator.CodePathNotAllowed},
		{"file to 65", func() error { return w.Rename("f", deep(MaxDepth)+"/f") }, mediator.CodePathNotAllowed},
		{"directory to 65", func() error { return w.Rename("m", deep(MaxDepth-1)+"/m") }, mediator.CodePathNotAllowed},
		{"directory to 64", func() error { return w.Rename("m", deep(MaxDepth-2)+"/m") }, ""},
		{"file to 64", func() error { return w.Rename("f", deep(MaxDepth-1)+"/f") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if mediator.CodeOf(err) != tc.code {
				t.Fatalf("%v; want %q", err, tc.code)
			}
			if tc.code != "" && !strings.Contains(err.Error(), fmt.Sprint(MaxDepth)) {
				t.Errorf("the refusal does not state the limit: %v", err)
			}
		})
	}
	// The attack: make x, move the tree into it, rename x back, again.
	w.Mkdir("top", false)
	for range 3 * MaxDepth {
		w.Mkdir("x", false)
		if err := w.Rename("top", "x/top"); err != nil {
			w.Remove("x", false)
			break
		}
		w.Rename("x", "top")
	}
	if d := deepest(t, dir); d > MaxDepth {
		t.Fatalf("an entry %d levels deep", d)
	}
	agrees(t, w, dir, DefaultMaxBytes)
	untouched(t, canary)
}

// deepest is the depth of dir's deepest entry, measured without the
// package.
func deepest(t *testing.T, dir string) int {
	t.Helper()
	d := 0
	filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if rel, rerr := filepath.Rel(dir, p); err == nil && rerr == nil && rel != "." {
			d = max(d, strings.Count(filepath.ToSlash(rel), "/")+1)
		}
		return err
	})
	return d
}
