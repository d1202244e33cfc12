package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/workflow"
	"github.com/agentgate/nmhost/workflow/script"
)

// isScript reports whether a workflow file is an agent's script rather
// than a workflow's JSON: by its name, as the converter reads it.
func isScript(name string) bool {
	switch filepath.Ext(name) {
	case ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts":
		return true
	}
	return false
}

func readAs(name string) string {
	if isScript(name) {
		return "script"
	}
	return "workflow"
}

// readWorkflow reads a workflow file: a workflow's JSON, parsed exactly,
// or an agent's script converted (its tool calls made for agent), the id
// the file's name.
func readWorkflow(name string, raw []byte, agent string) (workflow.Spec, error) {
	if !isScript(name) {
		return workflow.Parse(raw)
	}
	if mediator.ValidAgentID(agent) != nil {
		return workflow.Spec{}, mediator.Errorf(mediator.CodeBadRequest, "--agent %q is not an agent id", mediator.Truncate(agent, 64))
	}
	id := strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	if mediator.ValidAgentID(id) != nil {
		id = "script"
	}
	return script.Convert(name, raw, script.Options{ID: id, AgentID: agent})
}

// runWorkflowPlan: nmhost workflow plan [--agent ID] FILE. It prints the
// workflow and its layout, as JSON, and runs nothing: a script's plan can
// be read before anyone is asked about it.
func runWorkflowPlan(env Env) error {
	var agent string
	fs := flag.NewFlagSet("workflow plan", flag.ContinueOnError)
	fs.StringVar(&agent, "agent", "script", "a script's tool calls are made for agent `ID`")
	args, err := parse(specFor("workflow plan"), fs, env)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	spec, err := readWorkflow(args[0], raw, agent)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	lay, err := workflow.Plan(spec)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	enc := json.NewEncoder(env.Stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(map[string]any{"workflow": spec, "layout": lay})
}
