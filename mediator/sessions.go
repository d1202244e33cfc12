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
