package flows

import (
	"maps"
	"testing"

	"github.com/agentgate/nmhost/internal/datadir"
	"github.com/agentgate/nmhost/workflow"
)

// TestSettingsFromConfig: a data dir's workflow section sets the approval
// and the tools' modes; anything but "layer" approves plans whole, and the
// modes are a copy the config cannot change afterwards.
func TestSettingsFromConfig(t *testing.T) {
	off := false
	for _, tc := range []struct {
		name     string
		cfg      *datadir.WorkflowSettings
		approval string
		tools    map[string]string
		strict   bool
	}{
		{"no section", nil, workflow.ApprovePlan, nil, true},
		{"layer approval", &datadir.WorkflowSettings{Approval: "layer"}, workflow.ApproveLayer, nil, true},
		{"a misspelt approval approves plans", &datadir.WorkflowSettings{Approval: "layers"}, workflow.ApprovePlan, nil, true},
		{"tools and a switch", &datadir.WorkflowSettings{Tools: map[string]string{"network.fetch": "ask"}, StrictMode: &off},
			workflow.ApprovePlan, map[string]string{"network.fetch": "ask"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := datadir.Config{Workflow: tc.cfg}
			s := Settings(cfg)
			if s.Approval != tc.approval || !maps.Equal(s.Tools, tc.tools) || s.StrictMode != tc.strict {
				t.Fatalf("%+v", s)
			}
			if tc.cfg != nil && tc.cfg.Tools != nil {
				tc.cfg.Tools["network.fetch"] = "auto"
				if s.Tools["network.fetch"] != "ask" {
					t.Fatal("the settings share the config's map")
				}
			}
		})
	}
}
