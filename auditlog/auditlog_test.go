package auditlog

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

func TestCheckpointTime(t *testing.T) {
	at := time.Date(2026, 11, 23, 11, 20, 34, 123_000_000, time.UTC)
	text := string(tlog.FormatTree(tlog.Tree{N: 1})) + timeLine(at)
	cases := []struct {
		name   string
		signed string
		ok     bool
	}{
		{"with a time", text + "\n— sig\n", true},
		{"no time line", string(tlog.FormatTree(tlog.Tree{N: 1})) + "\n— sig\n", false},
		{"time not a time", strings.Replace(text, "2026", "year", 1) + "\n— sig\n", false},
		{"not a note", text, false},
		{"empty", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := CheckpointTime([]byte(c.signed))
			if ok != c.ok || (ok && !got.Equal(at)) {
				t.Fatalf("CheckpointTime = %s %v; want %v", got, ok, c.ok)
			}
		})
	}
}

// memHashes is a log held in memory: the stored hashes of its leaves.
type memHashes []tlog.Hash

func (m memHashes) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		out[i] = m[x]
	}
	return out, nil
}

// logOf builds a log of the given records and returns its stored hashes
// and head.
func logOf(t *testing.T, records ...string) (memHashes, tlog.Hash) {
	t.Helper()
	var m memHashes
	for i, r := range records {
		hs, err := tlog.StoredHashes(int64(i), []byte(r), m)
		if err != nil {
			t.Fatal(err)
		}
		m = append(m, hs...)
	}
	root, err := tlog.TreeHash(int64(len(records)), m)
	if err != nil {
		t.Fatal(err)
	}
	return m, root
}

func newKey(t *testing.T, name string) (note.Signer, note.Verifier, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return s, v, vkey
}

// TestOpenAndExtends: a checkpoint opens only with its own key and
// unaltered, and a log extends it only if it kept every record it signed.
// Everything here is pure: no store, no database.
func TestOpenAndExtends(t *testing.T) {
	signer, verifier, vkey := newKey(t, "log")
	_, otherV, otherKey := newKey(t, "other")
	m3, root3 := logOf(t, "a", "b", "c")
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	cp, err := Sign(signer, 3, root3, at)
	if err != nil {
		t.Fatal(err)
	}
	tree, when, err := Open(cp, verifier, vkey)
	if err != nil || tree.N != 3 || tree.Hash != root3 || !when.Equal(at) {
		t.Fatalf("Open = %+v %s %v", tree, when, err)
	}
	for _, c := range []struct {
		name string
		cp   []byte
		v    note.Verifier
		key  string
		code mediator.Code
	}{
		{"another key", cp, otherV, otherKey, mediator.CodeAuditBadSignature},
		{"altered", []byte(strings.Replace(string(cp), "\n3\n", "\n4\n", 1)), verifier, vkey, mediator.CodeAuditBadSignature},
		{"not a note", []byte("hello"), verifier, vkey, mediator.CodeBadRequest},
		{"empty", nil, verifier, vkey, mediator.CodeBadRequest},
		{"too large", []byte(strings.Repeat("x", MaxCheckpointBytes+1)), verifier, vkey, mediator.CodeTooLarge},
	} {
		t.Run("open/"+c.name, func(t *testing.T) {
			if _, _, err := Open(c.cp, c.v, c.key); mediator.CodeOf(err) != c.code {
				t.Fatalf("Open = %v; want %s", err, c.code)
			}
		})
	}
	m5, root5 := logOf(t, "a", "b", "c", "d", "e")
	r5, rroot5 := logOf(t, "a", "B", "c", "d", "e")
	m2, root2 := logOf(t, "a", "b")
	for _, c := range []struct {
		name string
		hr   memHashes
		size int64
		root tlog.Hash
		code mediator.Code
	}{
		{"the same log", m3, 3, root3, ""},
		{"a longer log", m5, 5, root5, ""},
		{"a rewritten log", r5, 5, rroot5, mediator.CodeAuditInconsistent},
		{"a shorter log", m2, 2, root2, mediator.CodeAuditTruncated},
	} {
		t.Run("extends/"+c.name, func(t *testing.T) {
			err := CheckExtends(tree, c.size, c.root, c.hr)
			if (c.code == "" && err != nil) || (c.code != "" && mediator.CodeOf(err) != c.code) {
				t.Fatalf("CheckExtends = %v; want %q", err, c.code)
			}
		})
	}
}
