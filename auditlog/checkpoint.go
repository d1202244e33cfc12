package auditlog

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate/nmhost/mediator"
)

// MaxCheckpointBytes bounds a checkpoint handed in to be checked: a signed
// tree head is about 250 bytes (three tree lines, the time, one
// signature), so anything this large is not one.
const MaxCheckpointBytes = 4 << 10

// timePrefix starts the line a checkpoint carries after the tree head:
// when it was signed, UTC, in milliseconds.
const timePrefix = "time "

func timeLine(at time.Time) string {
	return timePrefix + at.UTC().Format("2006-01-02T15:04:05.000Z") + "\n"
}

// Sign signs a tree head in the note format the Go checksum database uses
// (tlog.FormatTree), so tlog.ParseTree and note.Open read it, with one
// more line that tlog.ParseTree skips: the time of signing, so whoever
// keeps the checkpoint can say since when the log is known to extend it.
func Sign(signer note.Signer, size int64, root tlog.Hash, at time.Time) ([]byte, error) {
	text := string(tlog.FormatTree(tlog.Tree{N: size, Hash: root})) + timeLine(at)
	return note.Sign(&note.Note{Text: text}, signer)
}

// CheckpointTime returns when a checkpoint was signed, from its time line;
// false when it has none (checkpoints signed before the line existed) or
// the text is not a checkpoint. It does not check the signature: use it on
// checkpoints Open accepted or this host signed.
func CheckpointTime(signed []byte) (time.Time, bool) {
	text, _, ok := bytes.Cut(signed, []byte("\n\n"))
	if !ok {
		return time.Time{}, false
	}
	return textTime(string(text) + "\n")
}

// textTime reads the time line of a note's text: the fourth line.
func textTime(text string) (time.Time, bool) {
	lines := strings.SplitN(text, "\n", 5)
	if len(lines) < 5 {
		return time.Time{}, false
	}
	v, ok := strings.CutPrefix(lines[3], timePrefix)
	if !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// Open checks a checkpoint's signature with v (whose key text is vkey, for
// messages) and returns the tree head it signs and when it was signed
// (zero when it does not say). It refuses with audit_bad_signature a
// checkpoint signed by another key or altered, and with bad_request or
// too_large a text that is not a checkpoint.
func Open(cp []byte, v note.Verifier, vkey string) (tlog.Tree, time.Time, error) {
	switch {
	case len(cp) == 0:
		return tlog.Tree{}, time.Time{}, mediator.Errorf(mediator.CodeBadRequest, "no checkpoint given")
	case len(cp) > MaxCheckpointBytes:
		return tlog.Tree{}, time.Time{}, mediator.Errorf(mediator.CodeTooLarge, "a checkpoint is at most %d bytes, not %d", MaxCheckpointBytes, len(cp))
	}
	n, err := note.Open(cp, note.VerifierList(v))
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			var by []string
			for _, sig := range unverified.Note.UnverifiedSigs {
				by = append(by, fmt.Sprintf("%s+%08x", sig.Name, sig.Hash))
			}
			return tlog.Tree{}, time.Time{}, mediator.Errorf(mediator.CodeAuditBadSignature,
				"the checkpoint is signed by another key (%s), not this log's (%s): it was made elsewhere, or the key was replaced", strings.Join(by, ", "), vkey)
		case errors.As(err, &invalid):
			return tlog.Tree{}, time.Time{}, mediator.Errorf(mediator.CodeAuditBadSignature,
				"the checkpoint's signature does not verify with this log's key (%s): the checkpoint was altered", vkey)
		}
		return tlog.Tree{}, time.Time{}, mediator.Errorf(mediator.CodeBadRequest, "the checkpoint is not a signed note")
	}
	tree, err := tlog.ParseTree([]byte(n.Text))
	if err != nil {
		return tlog.Tree{}, time.Time{}, mediator.Errorf(mediator.CodeBadRequest, "the checkpoint is signed but is not a tree head")
	}
	at, _ := textTime(n.Text)
	return tree, at, nil
}

// CheckExtends proves that the log of size records with head root, whose
// stored hashes hr reads, extends the signed tree old: its first old.N
// records hash to old.Hash, and a consistency proof from old to the whole
// log checks. It refuses with audit_truncated a log shorter than old and
// with audit_inconsistent one that rewrote what old signed.
func CheckExtends(old tlog.Tree, size int64, root tlog.Hash, hr tlog.HashReader) error {
	switch {
	case old.N > size:
		gone := fmt.Sprintf("records %d-%d were", size+1, old.N)
		if size+1 == old.N {
			gone = fmt.Sprintf("record %d was", old.N)
		}
		return mediator.Errorf(mediator.CodeAuditTruncated, "the log has %d records but the checkpoint signed %d: %s removed since", size, old.N, gone)
	case old.N == 0:
		if empty, _ := tlog.TreeHash(0, nil); old.Hash != empty {
			return mediator.Errorf(mediator.CodeAuditInconsistent, "the checkpoint signs an empty log with a non-empty head")
		}
		return nil
	}
	oldRoot, err := tlog.TreeHash(old.N, hr)
	if err != nil {
		return err
	}
	if oldRoot != old.Hash {
		return mediator.Errorf(mediator.CodeAuditInconsistent, "the log's first %d records are not the ones the checkpoint signed (head %s, now %s): records among 1-%d were rewritten since", old.N, old.Hash, oldRoot, old.N)
	}
	if old.N == size {
		if root != old.Hash {
			return mediator.Errorf(mediator.CodeAuditInconsistent, "the log of %d records has head %s, not the checkpoint's %s", size, root, old.Hash)
		}
		return nil
	}
	proof, err := tlog.ProveTree(size, old.N, hr)
	if err != nil {
		return err
	}
	if tlog.CheckTree(proof, size, root, old.N, old.Hash) != nil {
		return mediator.Errorf(mediator.CodeAuditInconsistent, "the log of %d records does not extend the checkpoint of %d: its stored hashes were rewritten", size, old.N)
	}
	return nil
}
