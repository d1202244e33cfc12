package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentgate/nmhost/mediator"
)

// DefaultMaxModuleBytes is the default bound on a stored module (64 MiB).
const DefaultMaxModuleBytes = 64 << 20

// PutModule stores data content-addressed at <dir>/modules/<sha256>.wasm
// and returns the lowercase hex sha256. The file appears whole or not at
// all (temp file, fsync, rename, fsync of the directory), so a crash never
// leaves a half-written module under its final name. Storing the same bytes
// again is a no-op, unless the stored file no longer matches its name, in
// which case it is replaced. Modules above Options.MaxModuleBytes are
// refused with too_large.
func (s *Store) PutModule(ctx context.Context, data []byte) (string, error) {
	if int64(len(data)) > s.maxMod {
		return "", mediator.Errorf(mediator.CodeTooLarge, "module is %d bytes; the limit is %d", len(data), s.maxMod)
	}
	if err := ctx.Err(); err != nil {
		return "", storeErr("put module", err)
	}
	sum := sha256.Sum256(data)
	sha := hex.EncodeToString(sum[:])
	path := filepath.Join(s.modDir, sha+".wasm")

	// Already there and intact: nothing to do. Anything else (absent,
	// unreadable, corrupt) is repaired by writing it anew.
	if existing, err := s.readModuleFile(path); err == nil && bytes.Equal(hashOf(existing), sum[:]) {
		return sha, nil
	}
	if err := os.MkdirAll(s.modDir, 0o700); err != nil {
		return "", fmt.Errorf("module[%s]: %w", sha, &mediator.Error{Code: mediator.CodeInternal, Msg: "cannot create the modules directory", Err: err})
	}
	if err := writeFileAtomic(s.modDir, path, data); err != nil {
		return "", fmt.Errorf("module[%s]: %w", sha, &mediator.Error{Code: mediator.CodeInternal, Msg: "cannot store the module", Err: err})
	}
	return sha, nil
}

// writeFileAtomic writes data to path through a temp file in dir, which
// must be path's directory so that the rename is atomic.
func writeFileAtomic(dir, path string, data []byte) (err error) {
	f, err := os.CreateTemp(dir, ".tmp-*.wasm") // mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	// The rename is durable only once the directory entry is.
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ModulePath returns where the module with this sha256 lives. The hash must
// be 64 lowercase hex digits (bad_request otherwise), so that no caller can
// steer the path outside the modules directory. The file may not exist.
func (s *Store) ModulePath(sha string) (string, error) {
	if !mediator.IsHexSHA256(sha) {
		return "", mediator.Errorf(mediator.CodeBadRequest, "module hash %q is not 64 lowercase hex digits", mediator.Truncate(sha, 80))
	}
	return filepath.Join(s.modDir, sha+".wasm"), nil
}

// ReadModule returns the bytes of the module with this sha256, verified
// against the hash: hash_mismatch when the file was corrupted or replaced,
// bad_request for a malformed hash. A module that is not stored gives an
// internal_error that matches errors.Is(err, fs.ErrNotExist).
func (s *Store) ReadModule(ctx context.Context, sha string) ([]byte, error) {
	path, err := s.ModulePath(sha)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, storeErr("read module", err)
	}
	data, err := s.readModuleFile(path)
	if err != nil {
		var e *mediator.Error
		if errors.As(err, &e) {
			return nil, fmt.Errorf("module[%s]: %w", sha, err)
		}
		msg := "cannot read the module"
		if errors.Is(err, fs.ErrNotExist) {
			msg = "the module is not stored"
		}
		return nil, fmt.Errorf("module[%s]: %w", sha, &mediator.Error{Code: mediator.CodeInternal, Msg: msg, Err: err})
	}
	if got := hex.EncodeToString(hashOf(data)); got != sha {
		return nil, fmt.Errorf("module[%s]: %w", sha, mediator.Errorf(mediator.CodeHashMismatch, "the stored module hashes to %s: it was corrupted or replaced", got))
	}
	return data, nil
}

// readModuleFile reads a module file, refusing to read more than the size
// limit so that a file swapped for a huge one cannot exhaust memory.
func (s *Store) readModuleFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, s.maxMod+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > s.maxMod {
		return nil, mediator.Errorf(mediator.CodeHashMismatch, "the stored module is larger than the %d-byte limit: it was corrupted or replaced", s.maxMod)
	}
	return data, nil
}

func hashOf(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

// AgentModule returns an installed agent and its stored module, ready to
// run: unknown_agent when there is no such agent, bad_request when it was
// installed without a module, hash_mismatch when the stored file no longer
// has the recorded hash.
func (s *Store) AgentModule(ctx context.Context, agentID string) (mediator.AgentRecord, []byte, error) {
	if err := mediator.ValidAgentID(agentID); err != nil {
		return mediator.AgentRecord{}, nil, err
	}
	rec, err := s.Agent(ctx, agentID)
	if err != nil {
		return mediator.AgentRecord{}, nil, err
	}
	if rec.ModuleSHA256 == "" {
		return mediator.AgentRecord{}, nil, mediator.Errorf(mediator.CodeBadRequest, "agent %q was installed without a module", agentID)
	}
	module, err := s.ReadModule(ctx, rec.ModuleSHA256)
	if err != nil {
		return mediator.AgentRecord{}, nil, err
	}
	return rec, module, nil
}
