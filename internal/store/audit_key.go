package store

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/mediator"
)

// AuditKeyFile is the checkpoint signing key's file name in the data dir.
// It holds two lines: the note signer key (PRIVATE+KEY+...) and the
// verifier key that anyone may have.
const AuditKeyFile = "audit-key"

// AuditKeyName is the name the key signs checkpoints under (the name in
// the verifier key and on each signature line).
const AuditKeyName = "nmhost-audit"

// auditKey is the data dir's checkpoint key.
type auditKey struct {
	signer   note.Signer
	verifier note.Verifier
	vkey     string // the verifier key as text, name+hash+key
}

// AuditVerifierKey returns the verifier key of the data dir's checkpoint
// key, creating the key on first use. It is public: give it to whoever
// should check checkpoints and proofs.
func (s *Store) AuditVerifierKey() (string, error) {
	k, err := s.auditKey(true)
	if err != nil {
		return "", err
	}
	return k.vkey, nil
}

// auditKey reads the data dir's key; with create set it makes one when
// there is none yet. Verification never creates a key: a data dir that
// never signed a checkpoint has nothing to check one against.
func (s *Store) auditKey(create bool) (auditKey, error) {
	path := filepath.Join(s.dir, AuditKeyFile)
	k, err := readAuditKey(path)
	if !errors.Is(err, fs.ErrNotExist) || !create {
		return k, err
	}
	if err := checkPrivateDir(s.dir); err != nil {
		return auditKey{}, err
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, AuditKeyName)
	if err != nil {
		return auditKey{}, fmt.Errorf("audit key: %w", err)
	}
	// ErrExist: another process made the key first; everyone uses theirs.
	if err := datadir.PublishSecret(s.dir, path, skey+"\n"+vkey+"\n"); err != nil && !errors.Is(err, fs.ErrExist) {
		return auditKey{}, &mediator.Error{Code: mediator.CodeInternal, Msg: "cannot create the audit key " + path, Err: err}
	}
	return readAuditKey(path)
}

// checkPrivateDir refuses a data dir that group or others may write to:
// whoever can write the directory can swap the key file for theirs. A dir
// others may only read is fine (the key file itself is 0600); the host
// creates its data dir 0700.
func checkPrivateDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return &mediator.Error{Code: mediator.CodeInternal, Msg: "audit key: cannot read the data dir " + dir, Err: err}
	}
	// Windows has no mode bits to check; the data dir's ACL protects it.
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o022 != 0 {
		return mediator.Errorf(mediator.CodeInternal, "audit key: the data dir %s has mode %#o, so others could replace the signing key; refusing it (chmod 700 it)", dir, fi.Mode().Perm())
	}
	return nil
}

// readAuditKey loads the key, refusing a file that is a symlink, not a
// regular file, open to group or others, or not a matching key pair: any
// of those means someone else may know or have chosen the key.
func readAuditKey(path string) (auditKey, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return auditKey{}, err
	}
	refuse := func(why string) (auditKey, error) {
		return auditKey{}, mediator.Errorf(mediator.CodeInternal, "audit key[%s]: %s; refusing it", path, why)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return refuse("is a symlink")
	}
	if !fi.Mode().IsRegular() {
		return refuse("is not a regular file")
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return refuse(fmt.Sprintf("mode %#o lets others read or change it (chmod 600 it)", fi.Mode().Perm()))
	}
	if err := checkPrivateDir(filepath.Dir(path)); err != nil {
		return auditKey{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return auditKey{}, &mediator.Error{Code: mediator.CodeInternal, Msg: "cannot read the audit key " + path, Err: err}
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 {
		return refuse("is not a signer key line and a verifier key line")
	}
	signer, err := note.NewSigner(lines[0])
	if err != nil {
		return refuse("its signer key does not parse")
	}
	verifier, err := note.NewVerifier(lines[1])
	if err != nil {
		return refuse("its verifier key does not parse")
	}
	// The pair must match, or checkpoints would be signed by one key and
	// checked against another.
	probe := []byte("nmhost audit key check\n")
	sig, err := signer.Sign(probe)
	if err != nil || signer.Name() != verifier.Name() || signer.KeyHash() != verifier.KeyHash() || !verifier.Verify(probe, sig) {
		return refuse("its signer and verifier keys are not a pair")
	}
	return auditKey{signer: signer, verifier: verifier, vkey: lines[1]}, nil
}
