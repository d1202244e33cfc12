package shell

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

func asPathError(err error, pe **fs.PathError) bool { return errors.As(err, pe) }

// flags splits leading options ("-n", "-rn") from operands; "-n N" for
// head and tail takes its value.
type flags struct {
	set   map[byte]bool
	n     int
	name  string // find -name
	typ   string // find -type
	files []string
}

func parseFlags(cmd string, args []string, allowed string) (flags, error) {
	f := flags{set: map[byte]bool{}, n: 10}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case (cmd == "head" || cmd == "tail") && a == "-n" && i+1 < len(args):
			n, err := strconv.Atoi(args[i+1])
			if err != nil || n < 0 {
				return f, mediator.Errorf(mediator.CodeBadRequest, "%s: -n needs a count, not %q", cmd, mediator.Truncate(args[i+1], 20))
			}
			f.n, i = n, i+1
		case cmd == "find" && (a == "-name" || a == "-type") && i+1 < len(args):
			if a == "-name" {
				f.name = args[i+1]
			} else {
				f.typ = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "-") && len(a) > 1 && !(cmd == "grep" && len(f.files) > 0):
			for _, c := range []byte(a[1:]) {
				if !strings.ContainsRune(allowed, rune(c)) {
					return f, mediator.Errorf(mediator.CodeBadRequest, "%s: -%c is not an option this shell knows (%s)", cmd, c, orNone(allowed))
				}
				f.set[c] = true
			}
		default:
			f.files = append(f.files, a)
		}
	}
	return f, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return "-" + strings.Join(strings.Split(s, ""), ", -")
}

// builtin runs one command. Its arguments are expanded; the decision on
// it has been made.
func (sh *Shell) builtin(ctx context.Context, name string, args []string, in []byte, out io.Writer) error {
	opts := map[string]string{"ls": "laR", "cat": "", "head": "", "tail": "", "wc": "lwc", "grep": "invcr",
		"find": "", "mkdir": "p", "touch": "", "cp": "", "mv": "", "rm": "rf", "echo": "n", "pwd": ""}
	f, err := parseFlags(name, args, opts[name])
	if err != nil {
		return err
	}
	switch name {
	case "pwd":
		_, err := io.WriteString(out, WorkspacePath+"\n")
		return err
	case "echo":
		s := strings.Join(f.files, " ")
		if !f.set['n'] {
			s += "\n"
		}
		_, err := io.WriteString(out, s)
		return err
	case "mkdir":
		return each(f.files, func(p string) error { return sh.WS.Mkdir(p, f.set['p']) })
	case "touch":
		return each(f.files, func(p string) error {
			if _, err := sh.WS.Stat(p); err == nil {
				return nil
			}
			return sh.WS.WriteFile(p, nil, true)
		})
	case "rm":
		return each(f.files, func(p string) error {
			err := sh.WS.Remove(p, f.set['r'])
			if f.set['f'] && mediator.CodeOf(err) == mediator.CodeNotFound {
				return nil
			}
			return err
		})
	case "mv":
		if len(f.files) != 2 {
			return mediator.Errorf(mediator.CodeBadRequest, "mv takes a source and a destination")
		}
		return sh.WS.Rename(f.files[0], f.files[1])
	case "cp":
		if len(f.files) != 2 {
			return mediator.Errorf(mediator.CodeBadRequest, "cp takes a source and a destination")
		}
		b, err := sh.read(f.files[0])
		if err != nil {
			return err
		}
		return sh.WS.WriteFile(f.files[1], b, false)
	case "ls":
		return sh.ls(ctx, f, out)
	case "find":
		return sh.find(ctx, f, out)
	}
	// cat, head, tail, wc, grep read files, or stdin when given none.
	sources := f.files
	if name == "grep" {
		if len(sources) == 0 {
			return mediator.Errorf(mediator.CodeBadRequest, "grep needs a pattern")
		}
		return sh.grep(ctx, f, sources[0], sources[1:], in, out)
	}
	if len(sources) == 0 {
		return filter(name, f, "", in, out)
	}
	// cat, head, tail and wc are linear in an input of at most
	// MaxOutputBytes (milliseconds): the deadline is checked between files.
	for _, p := range sources {
		if err := cancelled(ctx, name); err != nil {
			return err
		}
		b, err := sh.read(p)
		if err != nil {
			return err
		}
		if err := filter(name, f, sh.name(p), b, out); err != nil {
			return err
		}
	}
	return nil
}

func each(paths []string, fn func(string) error) error {
	if len(paths) == 0 {
		return mediator.Errorf(mediator.CodeBadRequest, "a name is needed")
	}
	for _, p := range paths {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// filter is cat, head, tail and wc over one input.
func filter(name string, f flags, label string, b []byte, out io.Writer) error {
	switch name {
	case "cat":
		_, err := out.Write(b)
		return err
	case "head", "tail":
		lines := strings.SplitAfter(string(b), "\n")
		if len(lines) > 0 && lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		if name == "head" {
			lines = lines[:min(f.n, len(lines))]
		} else {
			lines = lines[max(0, len(lines)-f.n):]
		}
		_, err := io.WriteString(out, strings.Join(lines, ""))
		return err
	case "wc":
		l, w, c := bytes.Count(b, []byte("\n")), len(bytes.Fields(b)), len(b)
		var parts []string
		all := !f.set['l'] && !f.set['w'] && !f.set['c']
		for _, x := range []struct {
			on bool
			n  int
		}{{all || f.set['l'], l}, {all || f.set['w'], w}, {all || f.set['c'], c}} {
			if x.on {
				parts = append(parts, strconv.Itoa(x.n))
			}
		}
		if label != "" {
			parts = append(parts, label)
		}
		_, err := fmt.Fprintln(out, strings.Join(parts, " "))
		return err
	}
	return refuse("%q", name)
}

func (sh *Shell) grep(ctx context.Context, f flags, pattern string, files []string, in []byte, out io.Writer) error {
	if f.set['i'] {
		pattern = "(?i)" + pattern
	}
	// RE2: matching takes time linear in the input, whatever the pattern;
	// the matcher bounds the factor and checks the deadline inside a line.
	m, err := compileMatcher(pattern)
	if err != nil {
		return err
	}
	if f.set['r'] {
		var expanded []string
		for _, p := range files {
			names, err := sh.walk(ctx, p, "", "f")
			if err != nil {
				return err
			}
			expanded = append(expanded, names...)
		}
		files = expanded
	}
	one := func(label string, b []byte) error {
		count, n := 0, 0
		// The input is in memory already (at most MaxOutputBytes): lines
		// are slices of it, with no scanner buffer to allocate per file.
		for line := range bytes.Lines(b) {
			n++
			if err := cancelled(ctx, "grep"); err != nil {
				return err
			}
			line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
			matched := m.match(ctx, line)
			if err := cancelled(ctx, "grep"); err != nil {
				return err // the match may have been cut short
			}
			if matched == f.set['v'] {
				continue
			}
			count++
			if f.set['c'] {
				continue
			}
			prefix := ""
			if len(files) > 1 {
				prefix = sh.name(label) + ":"
			}
			if f.set['n'] {
				prefix += strconv.Itoa(n) + ":"
			}
			if _, err := fmt.Fprintf(out, "%s%s\n", prefix, line); err != nil {
				return err
			}
		}
		if f.set['c'] {
			_, err := fmt.Fprintln(out, count)
			return err
		}
		return nil
	}
	if len(files) == 0 {
		return one("", in)
	}
	for _, p := range files {
		if err := cancelled(ctx, "grep"); err != nil {
			return err
		}
		b, err := sh.read(p)
		if err != nil {
			return err
		}
		if err := one(p, b); err != nil {
			return err
		}
	}
	return nil
}

func (sh *Shell) ls(ctx context.Context, f flags, out io.Writer) error {
	dirs := f.files
	if len(dirs) == 0 {
		dirs = []string{"."}
	}
	for _, d := range dirs {
		if outside(d) {
			return mediator.Errorf(mediator.CodePathNotAllowed, "ls lists inside the workspace only")
		}
		if f.set['R'] {
			names, err := sh.walk(ctx, d, "", "")
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(out, sh.name(n))
			}
			continue
		}
		ents, err := sh.WS.ReadDir(d)
		if err != nil {
			if fi, serr := sh.WS.Stat(d); serr == nil && !fi.IsDir() {
				fmt.Fprintln(out, sh.name(d))
				continue
			}
			return err
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") && !f.set['a'] {
				continue
			}
			if f.set['l'] {
				info, _ := e.Info()
				size := int64(0)
				if info != nil {
					size = info.Size()
				}
				fmt.Fprintf(out, "%s %10d %s\n", e.Type().String()[:1], size, sh.name(e.Name()))
				continue
			}
			fmt.Fprintln(out, sh.name(e.Name()))
		}
	}
	return nil
}

func (sh *Shell) find(ctx context.Context, f flags, out io.Writer) error {
	start := "."
	if len(f.files) > 0 {
		start = f.files[0]
	}
	if outside(start) {
		return mediator.Errorf(mediator.CodePathNotAllowed, "find searches inside the workspace only")
	}
	names, err := sh.walk(ctx, start, f.name, f.typ)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := fmt.Fprintln(out, sh.name(n)); err != nil {
			return err
		}
	}
	return nil
}

// walk lists start's tree inside the workspace, filtered by a name
// pattern and a type ("f" files, "d" directories, "" both). A tree can
// be as large as the workspace's file quota: the deadline is checked at
// each directory.
func (sh *Shell) walk(ctx context.Context, start, pattern, typ string) ([]string, error) {
	var out []string
	var visit func(dir string) error
	visit = func(dir string) error {
		if err := cancelled(ctx, "the walk"); err != nil {
			return err
		}
		ents, err := sh.WS.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			p := path.Join(dir, e.Name())
			match := pattern == ""
			if !match {
				match, _ = path.Match(pattern, e.Name())
			}
			isDir := e.IsDir()
			if match && (typ == "" || typ == "d" && isDir || typ == "f" && e.Type().IsRegular()) {
				out = append(out, p)
			}
			if isDir {
				if err := visit(p); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if fi, err := sh.WS.Stat(start); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return []string{start}, nil
	}
	return out, visit(start)
}
