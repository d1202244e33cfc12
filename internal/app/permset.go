package app

import (
	"slices"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/pyagent"
	"github.com/agentgate/nmhost/wasmhost"
)

// withPermissionSet gives a profile that names no permission set the one
// its module needs (wasmhost.Inspect; for a Python agent, what its
// source uses, pyagent.Inspect), or, installed without a module, the
// smallest set that covers the permissions it asks for; either is stored
// as inferred, with its confidence. Then the set that will actually be
// used (an unsure inference falls back to minimal) must cover every
// required permission, or the install is refused: an agent that could
// never be granted what it requires is better refused now, with the
// reason, than failing at every run.
func withPermissionSet(prof mediator.Profile, module []byte) (mediator.Profile, error) {
	if prof.PermissionSet == "" {
		inf := mediator.SetInference{
			Set:        mediator.SmallestSet(slices.Concat(prof.Permissions.Required, prof.Permissions.Optional)),
			Confidence: 1,
		}
		if module != nil && prof.IsPython() {
			in, err := pyagent.Inspect(module)
			if err != nil {
				return prof, err
			}
			inf = in.SetInference
		} else if module != nil {
			in, err := wasmhost.Inspect(module)
			if err != nil {
				return prof, err
			}
			inf = in.SetInference
		}
		prof.PermissionSet, prof.PermissionSource, prof.PermissionConfidence = inf.Set, mediator.SetSourceInferred, inf.Confidence
	}
	choice := mediator.DeterminePermissionSet(prof, mediator.SetInference{})
	if perm, out := mediator.OutsideSet(choice.Set, prof.Permissions.Required); out {
		msg := "permissions.required: " + mediator.OutsideSetMessage(choice.Set, perm)
		if choice.Warning != "" {
			msg += " (" + choice.Warning + "; name a permissionSet in the profile to choose one yourself)"
		}
		return prof, mediator.Errorf(mediator.CodePermissionOutsideSet, "%s", msg)
	}
	return prof, nil
}
