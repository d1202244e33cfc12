package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

func TestModules(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir, Options{MaxModuleBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := append([]byte("\x00asm\x01\x00\x00\x00"), bytes.Repeat([]byte{7}, 1000)...)
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])

	t.Run("round trip", func(t *testing.T) {
		sha, err := s.PutModule(ctx, data)
		if err != nil || sha != want {
			t.Fatalf("PutModule = %q, %v; want %q", sha, err, want)
		}
		got, err := s.ReadModule(ctx, sha)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("ReadModule = %d bytes, %v", len(got), err)
		}
		path, err := s.ModulePath(sha)
		if err != nil || path != filepath.Join(dir, "modules", want+".wasm") {
			t.Fatalf("ModulePath = %q, %v", path, err)
		}
		for p, mode := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
			fi, err := os.Stat(p)
			if err != nil || fi.Mode().Perm() != mode {
				t.Errorf("%s: %v, %v; want mode %v", p, fi.Mode(), err, mode)
			}
		}
	})
	t.Run("idempotent put", func(t *testing.T) {
		path, _ := s.ModulePath(want)
		before, _ := os.Stat(path)
		sha, err := s.PutModule(ctx, data)
		if err != nil || sha != want {
			t.Fatalf("second PutModule = %q, %v", sha, err)
		}
		after, _ := os.Stat(path)
		if !os.SameFile(before, after) {
			t.Error("an intact module was rewritten")
		}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != 1 {
			t.Errorf("modules dir holds %d entries; want 1 (no temp files left)", len(entries))
		}
	})
	t.Run("corruption detected and repaired", func(t *testing.T) {
		path, _ := s.ModulePath(want)
		bad := bytes.Clone(data)
		bad[len(bad)-1] ^= 1
		if err := os.WriteFile(path, bad, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := s.ReadModule(ctx, want)
		wantCode(t, err, mediator.CodeHashMismatch)
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name the module", err)
		}
		// Putting the right bytes again repairs the file.
		if _, err := s.PutModule(ctx, data); err != nil {
			t.Fatal(err)
		}
		if got, err := s.ReadModule(ctx, want); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("after repair: %d bytes, %v", len(got), err)
		}
	})
	t.Run("oversized file on disk", func(t *testing.T) {
		sha := strings.Repeat("e", 64)
		path, _ := s.ModulePath(sha)
		if err := os.WriteFile(path, make([]byte, 1<<20+1), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := s.ReadModule(ctx, sha)
		wantCode(t, err, mediator.CodeHashMismatch)
	})
	t.Run("missing", func(t *testing.T) {
		_, err := s.ReadModule(ctx, strings.Repeat("0", 64))
		wantCode(t, err, mediator.CodeInternal)
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error %v does not match fs.ErrNotExist", err)
		}
	})
	t.Run("too large", func(t *testing.T) {
		_, err := s.PutModule(ctx, make([]byte, 1<<20+1))
		wantCode(t, err, mediator.CodeTooLarge)
	})
	t.Run("empty module", func(t *testing.T) {
		sha, err := s.PutModule(ctx, nil)
		if err != nil || sha != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
			t.Fatalf("PutModule(nil) = %q, %v", sha, err)
		}
	})
	bad := []struct{ name, sha string }{
		{"parent traversal", "../x"},
		{"traversal of hex length", "../" + strings.Repeat("a", 61)},
		{"uppercase", strings.ToUpper(want)},
		{"short", want[:63]},
		{"long", want + "0"},
		{"empty", ""},
		{"non-hex", strings.Repeat("g", 64)},
		{"with extension", want[:59] + ".wasm"},
		{"slash", want[:32] + "/" + want[33:]},
		{"NUL", want[:63] + "\x00"},
	}
	for _, c := range bad {
		t.Run("bad sha/"+c.name, func(t *testing.T) {
			_, err := s.ModulePath(c.sha)
			wantCode(t, err, mediator.CodeBadRequest)
			_, err = s.ReadModule(ctx, c.sha)
			wantCode(t, err, mediator.CodeBadRequest)
		})
	}
}
