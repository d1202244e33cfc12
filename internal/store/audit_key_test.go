package store

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// writeFile0600 replaces the data dir's key file with text, as someone
// with write access to the data dir could.
func writeFile0600(s *Store, text string) error {
	path := filepath.Join(s.Dir(), AuditKeyFile)
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, []byte(text), 0o600)
}

func removeKey(s *Store) error { return os.Remove(filepath.Join(s.Dir(), AuditKeyFile)) }

func TestAuditKeyCreatedOnFirstUseOwnerOnly(t *testing.T) {
	dir := freshDir(t)
	s := openTestStore(t, dir)
	path := filepath.Join(dir, AuditKeyFile)
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("key exists before first use: %v", err)
	}
	// Verifying never creates the key.
	if _, err := s.VerifyAudit(context.Background(), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("verify created the key: %v", err)
	}
	vkey, err := s.AuditVerifierKey()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(vkey, AuditKeyName+"+") {
		t.Fatalf("verifier key %q", vkey)
	}
	if _, err := note.NewVerifier(vkey); err != nil {
		t.Fatalf("verifier key %q: %v", vkey, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v; want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "PRIVATE+KEY+"+AuditKeyName+"+") || !strings.HasSuffix(string(b), "\n"+vkey+"\n") {
		t.Fatalf("key file holds %q", b)
	}
	s.Close()
	s2 := openTestStore(t, dir)
	if again, err := s2.AuditVerifierKey(); err != nil || again != vkey {
		t.Fatalf("after reopening: %q %v; want the same key %q", again, err, vkey)
	}
}

// TestAuditKeyConcurrentFirstUseAgrees: host processes starting together
// on a fresh data dir end up with one key, not one each.
func TestAuditKeyConcurrentFirstUseAgrees(t *testing.T) {
	dir := t.TempDir()
	const n = 8
	stores := make([]*Store, n)
	for i := range stores {
		stores[i] = openTestStore(t, dir)
	}
	keys := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() { keys[i], errs[i] = s.AuditVerifierKey() })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || keys[i] != keys[0] {
			t.Fatalf("store %d: %q %v; store 0: %q", i, keys[i], errs[i], keys[0])
		}
	}
}

func TestAuditKeyRefusesUnsafeFiles(t *testing.T) {
	skey, vkey, err := note.GenerateKey(rand.Reader, AuditKeyName)
	if err != nil {
		t.Fatal(err)
	}
	_, otherVkey, err := note.GenerateKey(rand.Reader, AuditKeyName)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		word  string
	}{
		{"group-readable key", func(t *testing.T, dir string) {
			writeKey(t, dir, skey+"\n"+vkey+"\n", 0o640)
		}, "mode"},
		{"world-writable key", func(t *testing.T, dir string) {
			writeKey(t, dir, skey+"\n"+vkey+"\n", 0o602)
		}, "mode"},
		{"symlink", func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "k")
			if err := os.WriteFile(target, []byte(skey+"\n"+vkey+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, filepath.Join(dir, AuditKeyFile)); err != nil {
				t.Fatal(err)
			}
		}, "symlink"},
		{"directory", func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, AuditKeyFile), 0o700); err != nil {
				t.Fatal(err)
			}
		}, "regular"},
		{"not a key", func(t *testing.T, dir string) {
			writeKey(t, dir, "hello\n", 0o600)
		}, "verifier key line"},
		{"keys that are not a pair", func(t *testing.T, dir string) {
			writeKey(t, dir, skey+"\n"+otherVkey+"\n", 0o600)
		}, "not a pair"},
		{"data dir writable by others", func(t *testing.T, dir string) {
			if err := os.Chmod(dir, 0o770); err != nil {
				t.Fatal(err)
			}
		}, "others could replace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openTestStore(t, dir)
			c.setup(t, dir)
			_, err := s.AuditVerifierKey()
			if err == nil || !strings.Contains(err.Error(), c.word) {
				t.Fatalf("AuditVerifierKey: %v; want a refusal naming %q", err, c.word)
			}
			if _, _, _, err := s.AuditCheckpoint(context.Background()); err == nil {
				t.Fatal("a checkpoint was signed with a refused key")
			}
		})
	}
}

func writeKey(t *testing.T, dir, text string, mode os.FileMode) {
	t.Helper()
	path := filepath.Join(dir, AuditKeyFile)
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}
