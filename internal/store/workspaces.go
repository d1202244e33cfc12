package store

import (
	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workspace"
)

// OpenWorkspace opens session id's workspace, creating its directory
// (owner-only) on first use, with the default quotas. The caller closes
// it when the run ends.
func (s *Store) OpenWorkspace(id string) (*workspace.Workspace, error) {
	if err := mediator.ValidSessionID(id); err != nil {
		return nil, err
	}
	return workspace.Open(s.SessionWorkspaceDir(id), workspace.Limits{})
}
