package export

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/mediator"
)

// Cursor is how far a collector has acknowledged: every audit record up
// to AuditSeq, every denial up to DenialID and the checkpoint of
// CheckpointSize records. The zero value starts from the beginning.
type Cursor struct {
	Endpoint       string `json:"endpoint"` // for people reading the file; the file name is keyed by it
	AuditSeq       int64  `json:"auditSeq"`
	DenialID       int64  `json:"denialId"`
	CheckpointSize int64  `json:"checkpointSize"`
}

// maxCursorBytes bounds the file read: it holds four small fields.
const maxCursorBytes = 64 << 10

// CursorPath is the cursor file of an endpoint in the data dir. Each
// endpoint has its own: a second collector gets everything, not what the
// first one acknowledged.
func CursorPath(dataDir, endpoint string) string {
	sum := sha256.Sum256([]byte(endpoint))
	return filepath.Join(dataDir, "export-cursor-"+hex.EncodeToString(sum[:6])+".json")
}

// ReadCursor reads a cursor file; a missing one is the zero cursor. The
// file is read the way every input is (mediator.DecodeExact): a member
// misspelt by hand is refused, not read as zero and the log sent again.
func ReadCursor(path string) (Cursor, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Cursor{}, nil
	}
	if err != nil {
		return Cursor{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCursorBytes+1))
	if err != nil {
		return Cursor{}, err
	}
	if len(b) > maxCursorBytes {
		return Cursor{}, fmt.Errorf("export cursor %s is over %d bytes: not a cursor", path, maxCursorBytes)
	}
	var c Cursor
	if err := mediator.DecodeExact(b, &c); err != nil {
		return Cursor{}, fmt.Errorf("export cursor %s: %v (remove it to export everything again)", path, err)
	}
	if c.AuditSeq < 0 || c.DenialID < 0 || c.CheckpointSize < 0 {
		return Cursor{}, fmt.Errorf("export cursor %s holds a negative position (remove it to export everything again)", path)
	}
	return c, nil
}

// writeCursor replaces the cursor file atomically (temporary file, fsync,
// rename, fsync of the directory): after a crash it says either the old
// position or the new one, and the new one only once the collector
// acknowledged everything up to it.
func writeCursor(path string, c Cursor) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return datadir.WriteFileAtomic(path, append(b, '\n'), 0o600)
}
