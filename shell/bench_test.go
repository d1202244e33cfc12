package shell

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/agentgate/nmhost/internal/testkit"
	"github.com/agentgate/nmhost/workspace"
)

// benchFiles is the size of the benchmark's workspace: 100 directories
// of 100 files, each a few short lines, one in ten holding the pattern.
const benchFiles = 10_000

func benchWorkspace(b *testing.B) (*workspace.Workspace, string) {
	b.Helper()
	dir := b.TempDir()
	for d := range benchFiles / 100 {
		sub := filepath.Join(dir, fmt.Sprintf("dir%03d", d))
		if err := os.Mkdir(sub, 0o700); err != nil {
			b.Fatal(err)
		}
		for f := range 100 {
			body := fmt.Sprintf("line one of file %d\nline two\nline three, the last\n", f)
			if f%10 == 0 {
				body += "TODO: look at this\n"
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%03d.txt", f)), []byte(body), 0o600); err != nil {
				b.Fatal(err)
			}
		}
	}
	ws, err := workspace.Open(dir, workspace.Limits{MaxFiles: 2 * benchFiles})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	return ws, dir
}

// BenchmarkShellLsR is `ls -R` of a 10,000-file workspace through the
// shell (parse, decide, walk through the workspace's os.Root, print)
// beside the same listing done directly: fs.WalkDir over os.Root's FS,
// each name printed.
func BenchmarkShellLsR(b *testing.B) {
	ws, dir := benchWorkspace(b)
	var base float64
	b.Run("baseline", func(b *testing.B) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer root.Close()
		for b.Loop() {
			w := bufio.NewWriter(io.Discard)
			n := 0
			err := fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil || p == "." {
					return err
				}
				n++
				fmt.Fprintln(w, p)
				return nil
			})
			w.Flush()
			if err != nil || n != benchFiles+benchFiles/100 {
				b.Fatal(err, n)
			}
		}
		base = testkit.NsPerOp(b)
	})
	b.Run("shell", func(b *testing.B) {
		sh := &Shell{WS: ws, Decide: AtLevel("medium", nil)}
		var out bytes.Buffer
		for b.Loop() {
			out.Reset()
			if err := sh.Run(context.Background(), "ls -R", &out); err != nil {
				b.Fatal(err)
			}
		}
		if n := bytes.Count(out.Bytes(), []byte("\n")); n != benchFiles+benchFiles/100 {
			b.Fatalf("%d names", n)
		}
		if base > 0 {
			b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
		}
	})
}

// BenchmarkShellGrepR is `grep -r TODO .` over the same workspace through
// the shell beside the same search done directly: fs.WalkDir over
// os.Root's FS, each file read and its lines matched with the same
// regular expression, matches printed with their names.
func BenchmarkShellGrepR(b *testing.B) {
	ws, dir := benchWorkspace(b)
	const matches = benchFiles / 10
	var base float64
	b.Run("baseline", func(b *testing.B) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			b.Fatal(err)
		}
		defer root.Close()
		re := regexp.MustCompile("TODO")
		fsys := root.FS()
		for b.Loop() {
			w := bufio.NewWriter(io.Discard)
			n := 0
			err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return err
				}
				body, err := fs.ReadFile(fsys, p)
				if err != nil {
					return err
				}
				for line := range bytes.Lines(body) {
					if re.Match(line) {
						n++
						fmt.Fprintf(w, "%s:%s", p, line)
					}
				}
				return nil
			})
			w.Flush()
			if err != nil || n != matches {
				b.Fatal(err, n)
			}
		}
		base = testkit.NsPerOp(b)
	})
	b.Run("shell", func(b *testing.B) {
		sh := &Shell{WS: ws, Decide: AtLevel("medium", nil)}
		var out bytes.Buffer
		for b.Loop() {
			out.Reset()
			if err := sh.Run(context.Background(), "grep -r TODO .", &out); err != nil {
				b.Fatal(err)
			}
		}
		if n := bytes.Count(out.Bytes(), []byte("\n")); n != matches {
			b.Fatalf("%d matches", n)
		}
		if base > 0 {
			b.ReportMetric(testkit.NsPerOp(b)/base, "x-baseline")
		}
	})
}
