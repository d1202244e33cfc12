package app

import (
	"context"
	"encoding/json"

	"github.com/agentgate/nmhost/mediator"
)

// UpdateSessionSettings creates session id or changes its settings with
// patch ({"permissionLevel": ..., "workspace": ...}). A level above the
// administrator's maxSessionLevel is refused and recorded, whichever
// front end asked: raising a session's level is the person's decision,
// within the administrator's.
func (a *App) UpdateSessionSettings(ctx context.Context, id string, patch []byte) (mediator.SessionSettings, error) {
	if err := mediator.ValidSessionID(id); err != nil {
		return mediator.SessionSettings{}, err
	}
	// The rule is applied to the settings the patch makes, inside the
	// store's transaction: the store parses the patch, exactly, once.
	set, err := a.st.UpdateSessionSettingsIf(ctx, id, patch, func(next mediator.SessionSettings) error {
		return a.Admin().RefuseLevel(next.PermissionLevel)
	})
	if mediator.CodeOf(err) == mediator.CodeAdminPolicy {
		return set, a.refusedSession(ctx, id, err)
	}
	return set, err
}

// SetSessionLevel is UpdateSessionSettings of the level alone; an empty
// level creates the session at the default level or leaves it as it is.
func (a *App) SetSessionLevel(ctx context.Context, id, level string) (mediator.SessionSettings, error) {
	patch := map[string]string{}
	if level != "" {
		patch["permissionLevel"] = level
	}
	raw, err := json.Marshal(patch)
	if err != nil {
		return mediator.SessionSettings{}, err
	}
	return a.UpdateSessionSettings(ctx, id, raw)
}

// refusedSession records the refusal of a session's settings.
func (a *App) refusedSession(ctx context.Context, id string, err error) error {
	a.LogDenial(ctx, a.layer, mediator.Denial{Code: mediator.CodeOf(err),
		Context: mediator.DenialContext{Reason: mediator.MessageOf(err), Method: opSetSession, Origin: a.origin,
			Details: map[string]string{"operation": opSetSession, "decidedBy": "request:" + opSetSession, "session": mediator.Truncate(id, 64)}}})
	return mediator.Recorded(err)
}
