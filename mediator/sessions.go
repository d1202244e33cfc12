package mediator

// SessionSettings are one session's settings: the permission
// level its runs get and its workspace. The zero value is not stored; a new
// session starts at LevelMedium.
type SessionSettings struct {
	PermissionLevel string           `json:"permission_level"`
	Workspace       SessionWorkspace `json:"workspace"`
}

// SessionWorkspace is the normalised workspace of a session. Its root is
// chosen by the store, never by the caller, so a client cannot point a
// session at a directory of its choosing.
type SessionWorkspace struct {
	Mode    string `json:"mode"`     // always "session": one directory per session
	RootDir string `json:"root_dir"` // <data dir>/session-workspaces/<session id>
}

// WorkspaceModeSession is the only workspace mode: each session has its own.
const WorkspaceModeSession = "session"

// MaxSessionIDLen bounds a session id.
const MaxSessionIDLen = 128

// Session ids name directories, so they are a portable file name: no path
// separators, no leading dot (".", ".." and hidden files), nothing Windows
// refuses.
var sessionIDPattern = lazyRegexp(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

// ValidSessionID reports whether id can name a session (unknown_session
// otherwise: an id that can never exist is not a session).
func ValidSessionID(id string) error {
	if id == "" || len(id) > MaxSessionIDLen || !sessionIDPattern().MatchString(id) {
		return Errorf(CodeUnknownSession, "session id %q must be 1-%d characters of letters, digits, '.', '_' or '-', not starting with '.'", Truncate(id, 64), MaxSessionIDLen)
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
