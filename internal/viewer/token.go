package viewer

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agentgate/nmhost/internal/datadir"
)

// TokenFile is the access token's file name in the data dir.
const TokenFile = "viewer-token"

// tokenBytes is the token's entropy: 256 bits, out of reach of guessing
// even at loopback request rates.
const tokenBytes = 32

// Token is the viewer's access token. Its String is the URL-safe form that
// goes into the printed URL's fragment, the Authorization header and the
// websocket's token subprotocol (base64url is all HTTP token characters).
type Token struct{ s string }

func (t Token) String() string { return t.s }

// Matches compares a presented token in constant time. The zero Token
// matches nothing, so a viewer with no token loaded admits no one.
func (t Token) Matches(presented string) bool {
	if t.s == "" || len(presented) != len(t.s) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(presented), []byte(t.s)) == 1
}

// LoadOrCreateToken reads the token from dir/viewer-token, creating it with
// owner-only rights (0600) on first start. It refuses a token file that is a
// symlink, is not a regular file, is readable or writable by group or
// others, or does not hold a well-formed token: any of those means someone
// else may know or have chosen the token.
func LoadOrCreateToken(dir string) (Token, error) {
	path := filepath.Join(dir, TokenFile)
	for range 2 {
		t, err := readToken(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return t, err
		}
		raw := make([]byte, tokenBytes)
		if _, err := rand.Read(raw); err != nil {
			return Token{}, fmt.Errorf("viewer token: %w", err)
		}
		s := base64.RawURLEncoding.EncodeToString(raw)
		err = datadir.PublishSecret(dir, path, s+"\n")
		if errors.Is(err, fs.ErrExist) {
			continue // another start won; read its token
		}
		if err != nil {
			return Token{}, fmt.Errorf("viewer token[%s]: %w", path, err)
		}
		return Token{s: s}, nil
	}
	return Token{}, fmt.Errorf("viewer token[%s]: created and removed by another process while starting", path)
}

func readToken(path string) (Token, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Token{}, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return Token{}, fmt.Errorf("viewer token[%s]: is a symlink; refusing it (remove it to get a new token)", path)
	}
	if !fi.Mode().IsRegular() {
		return Token{}, fmt.Errorf("viewer token[%s]: is not a regular file", path)
	}
	// Windows has no mode bits to check; the data dir's ACL protects it.
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return Token{}, fmt.Errorf("viewer token[%s]: mode %#o lets others read or change it; refusing it (chmod 600, or remove it to get a new token)", path, fi.Mode().Perm())
	}
	// O_NOFOLLOW would close the gap between Lstat and open; a swap in that
	// gap needs write access to the 0700 data dir, which already owns us.
	b, err := os.ReadFile(path)
	if err != nil {
		return Token{}, fmt.Errorf("viewer token[%s]: %w", path, err)
	}
	s := strings.TrimSpace(string(b))
	if raw, err := base64.RawURLEncoding.DecodeString(s); err != nil || len(raw) != tokenBytes {
		return Token{}, fmt.Errorf("viewer token[%s]: not a %d-byte base64url token; refusing it (remove it to get a new token)", path, tokenBytes)
	}
	return Token{s: s}, nil
}
