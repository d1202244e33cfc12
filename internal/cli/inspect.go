package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/pyagent"
	"github.com/agentgate/nmhost/wasmhost"
)

// inspectReport is `nmhost inspect --json`: the inspection, and the set a
// run would use if the profile named none.
type inspectReport struct {
	Module string `json:"module"`
	wasmhost.Inspection
	Threshold float64            `json:"threshold"`
	Used      mediator.SetChoice `json:"used"`
}

// runInspect: nmhost inspect [--json] MODULE.wasm. It reads the module
// only; no data dir is opened, so a reviewer can run it on a module before
// anything is installed.
func runInspect(env Env) error {
	var jsonOutput bool
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.BoolVar(&jsonOutput, "json", false, "print one JSON object")
	args, err := parse(specFor("inspect"), fs, env)
	if err != nil {
		return err
	}
	module, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	if strings.HasSuffix(args[0], ".py") {
		return inspectPython(env, args[0], module, jsonOutput)
	}
	in, err := wasmhost.Inspect(module)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	rep := inspectReport{Module: args[0], Inspection: in, Threshold: mediator.PermissionConfidenceThreshold,
		Used: mediator.DeterminePermissionSet(mediator.Profile{}, in.SetInference)}
	if jsonOutput {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	kind := "side-effecting"
	if in.Pure {
		kind = "pure"
	}
	printInference(env, args[0]+": "+kind, in.SetInference, rep.Used)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMPORT\tKIND\tPERMISSION\tUSE")
	for _, im := range in.Imports {
		perm := string(im.Permission)
		if perm == "" {
			perm = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(im.Module+"."+im.Name), im.Kind, perm, im.Use)
	}
	return tw.Flush()
}

// pythonReport is `nmhost inspect --json AGENT.py`.
type pythonReport struct {
	Source  string `json:"source"`
	Runtime string `json:"runtime"`
	pyagent.Inspection
	Threshold float64            `json:"threshold"`
	Used      mediator.SetChoice `json:"used"`
}

// inspectPython reports the restricted_api names a Python agent's source
// uses and the set they infer, with a confidence below a module's: Python
// can reach a name the text does not spell.
func inspectPython(env Env, path string, src []byte, jsonOutput bool) error {
	in, err := pyagent.Inspect(src)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rep := pythonReport{Source: path, Runtime: mediator.RuntimePython, Inspection: in, Threshold: mediator.PermissionConfidenceThreshold,
		Used: mediator.DeterminePermissionSet(mediator.Profile{}, in.SetInference)}
	if jsonOutput {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printInference(env, path+": Python agent", in.SetInference, rep.Used)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RESTRICTED_API\tPERMISSION\tLINE")
	for _, u := range in.Uses {
		perm := string(u.Permission)
		if perm == "" {
			perm = "- (no such function)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\n", cell(u.Name), perm, u.Line)
	}
	return tw.Flush()
}

// printInference is the head of both reports: what was read, the set and
// its confidence, the set a run would use, and the reasons.
func printInference(env Env, what string, in mediator.SetInference, used mediator.SetChoice) {
	fmt.Fprintf(env.Stdout, "%s, permission set %s, confidence %s\n", what, in.Set, strconv.FormatFloat(in.Confidence, 'f', 2, 64))
	if used.Fallback {
		fmt.Fprintf(env.Stdout, "runs under: %s (%s)\n", used.Set, used.Warning)
	} else {
		fmt.Fprintf(env.Stdout, "runs under: %s\n", used.Set)
	}
	for _, r := range in.Reasons {
		fmt.Fprintf(env.Stdout, "  - %s\n", r)
	}
}
