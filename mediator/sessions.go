package mediator

import (
	"unicode"
	"unicode/utf8"
)

// SessionSettings are one session's settings: the permission
// level its runs get and its workspace. The zero value is not stored; a new
// session starts at LevelMedium.
type SessionSettings struct {
	PermissionLevel string           `json:"permissionLevel"`
	Workspace       SessionWorkspace `json:"workspace"`
}

// SessionWorkspace is the normalised workspace of a session. Its root is
// chosen by the store, never by the caller, so a client cannot point a
// session at a directory of its choosing.
type SessionWorkspace struct {
	Mode    string `json:"mode"`    // always "session": one directory per session
	RootDir string `json:"rootDir"` // <data dir>/session-workspaces/<encoded session id>
}

// WorkspaceModeSession is the only workspace mode: each session has its own.
const WorkspaceModeSession = "session"

// MaxSessionIDLen bounds a session id, in bytes.
const MaxSessionIDLen = 256

// ValidSessionID reports whether id can name a session (unknown_session
// otherwise: an id that can never exist is not a session). An id is any
// non-empty UTF-8 text of at most MaxSessionIDLen bytes without control
// or invisible format characters: a session id is a name a person or a
// client chose ("chat 2026-11-23", "issue/15", "日記"), and it is never a
// file name: the store derives its workspace directory's name from it.
// An id is shown in the popup, the viewer, the CLI and log lines, so what
// could forge or hide what a person reads there is refused:
//   - control characters (C0, DEL, C1): a newline, an escape sequence or
//     a NUL;
//   - format characters (Unicode category Cf): the bidi controls
//     (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C) reorder
//     what follows them, and the invisible ones (zero-width space and
//     joiners U+200B-U+200D, word joiner U+2060, BOM U+FEFF, soft hyphen
//     U+00AD, tag characters) make two ids that look the same; an emoji
//     sequence joined by U+200D is refused with them;
//   - the line and paragraph separators U+2028 and U+2029, which some
//     viewers break lines at.
func ValidSessionID(id string) error {
	if id == "" || len(id) > MaxSessionIDLen {
		return Errorf(CodeUnknownSession, "session id %q must be 1-%d bytes", Truncate(id, 64), MaxSessionIDLen)
	}
	if !utf8.ValidString(id) {
		return Errorf(CodeUnknownSession, "session id %q is not valid UTF-8", Truncate(id, 64))
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return Errorf(CodeUnknownSession, "session id %q has a control character (U+%04X)", Truncate(id, 64), r)
		}
		if unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029' {
			return Errorf(CodeUnknownSession, "session id %q has an invisible format character (U+%04X)", Truncate(id, 64), r)
		}
	}
	return nil
}

var levelRank = map[string]int{LevelLow: 0, LevelMedium: 1, LevelHigh: 2}

// RunLevel is the level a run of a session at level session gets when the
// request asks for asked: the session's, or a lower one; never higher
// (session_level), since raising it is the user's decision about the
// session, not a run's.
func RunLevel(sessionID, session, asked string) (string, error) {
	if asked == "" {
		return session, nil
	}
	a, err := ParseLevel(asked)
	if err != nil {
		return "", err
	}
	if levelRank[a] > levelRank[session] {
		return "", Errorf(CodeSessionLevel, "session %q is at level %s; a run may lower it but not raise it to %s (change the session's level to do that)", Truncate(sessionID, 64), session, a)
	}
	return a, nil
}
