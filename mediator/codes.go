package mediator

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable reason for a decision or an error.
// Codes are part of the wire protocol (the reply's "code" field and every
// denial record): never rename one, only add.
type Code string

// The reason codes. The empty Code is never a valid reason: a Decision or an
// Error carrying it denies and reports CodeInternal on the wire.
const (
	CodeAllowed Code = "allowed"

	// Request and protocol level.
	CodeBadRequest       Code = "bad_request"
	CodeUnknownType      Code = "unknown_type"
	CodeOriginNotAllowed Code = "origin_not_allowed"
	CodeTooLarge         Code = "too_large"
	CodeTimeout          Code = "timeout"
	CodeInternal         Code = "internal_error"

	// Agents and profiles.
	CodeUnknownAgent       Code = "unknown_agent"
	CodeInvalidProfile     Code = "invalid_profile"
	CodeInvalidAllowedHost Code = "invalid_allowed_host"
	CodeHashMismatch       Code = "hash_mismatch"

	// Permissions.
	CodePermissionNotGranted Code = "permission_not_granted"
	CodeUnknownPermission    Code = "unknown_permission"
	// CodeRevokedByUser: the user revoked the permission and it stays
	// revoked until they grant it again (`nmhost grant`, the options page).
	CodeRevokedByUser Code = "revoked_by_user"
	// CodePermissionOutsideSet: the permission is outside the agent's
	// permission set, the ceiling on what it may be granted.
	CodePermissionOutsideSet Code = "permission_outside_set"
	// CodeSetFallback: a link refused because an inferred permission set
	// was not trusted (confidence below PermissionConfidenceThreshold, or
	// an unknown name) and the run fell back to minimal; the denial
	// carries the confidence.
	CodeSetFallback Code = "permission_set_fallback"

	// Network.
	CodeNetworkDisabled  Code = "network_disabled"
	CodeHostNotAllowed   Code = "host_not_allowed"
	CodePrivateAddress   Code = "private_address"
	CodeSchemeNotAllowed Code = "scheme_not_allowed"
	CodeNonCanonicalHost Code = "non_canonical_host"
	CodeInvalidURL       Code = "invalid_url"
	CodeHeaderNotAllowed Code = "header_not_allowed"
	CodeTooManyRedirects Code = "too_many_redirects"
	CodeUpstreamError    Code = "upstream_error"
	CodeDNSError         Code = "dns_error"
	CodeMethodNotAllowed Code = "method_not_allowed"
	// CodeBodyNotAllowed: a GET, HEAD or OPTIONS fetch with a request body.
	CodeBodyNotAllowed Code = "body_not_allowed"

	// The browser side and the user.
	CodeNoBrowser       Code = "no_browser"            // a browser call with no extension attached
	CodeUserDenied      Code = "user_denied"           // the user answered deny (once)
	CodeBlockedByUser   Code = "blocked_by_user"       // a remembered always-block answer
	CodePromptTimeout   Code = "prompt_timeout"        // nobody answered the prompt in time
	CodePromptCancelled Code = "prompt_cancelled"      // the prompt was withdrawn (its run ended, its time ran out) before an answer counted; a late answer is refused with it
	CodeConfirmRequired Code = "confirmation_required" // needs a prompt and no one can be asked
	// CodeAnswerNotOffered: the extension's answer is no answer, or one the
	// prompt did not offer (a forged "always" to a layer's prompt); it
	// denies, so an answer can never reach wider than the question.
	CodeAnswerNotOffered Code = "answer_not_offered"
	// CodeAnswerMismatch: an answer bound to no prompt this host waits
	// for (another host process's id, an id it never sent) or given in a
	// window that did not show this prompt (its digest differs); it
	// denies, and nothing is remembered.
	CodeAnswerMismatch Code = "answer_mismatch"
	CodePageChanged    Code = "page_changed" // the document a run is bound to is gone or has another origin

	// Running WebAssembly agents.
	CodeInvalidModule    Code = "invalid_module"     // not a module wazero accepts
	CodeModuleLimits     Code = "module_limits"      // the module declares more than wasmhost allows (tables, locals, ...)
	CodeImportNotGranted Code = "import_not_granted" // link-time deny: an import the grants do not cover
	CodeTrap             Code = "trap"               // the guest trapped (unreachable, bad memory access, ...)
	CodeMemoryLimit      Code = "memory_limit"       // the guest needed more than capabilities.maxMemory
	CodeCallLimit        Code = "call_limit"         // too many restricted API calls in one run
	CodeExitNonZero      Code = "exit_nonzero"       // the guest exited with a non-zero status
	CodeCompileTimeout   Code = "compile_timeout"    // compiling the module passed the host's compile budget; the run never started
	// CodeMemoryBusy: the host's budget for guest memory (the sum of the
	// maxMemory of the runs in one host process) had no room for the run
	// before its deadline, or is smaller than its maxMemory.
	CodeMemoryBusy Code = "memory_busy"

	// Python agents (run in the extension's sandbox, decided here).
	CodeWrongRuntime     Code = "wrong_runtime"     // run-agent of a Python agent, python-run of a WebAssembly one
	CodeUnknownRun       Code = "unknown_run"       // no Python run with that id for that agent in this host (never started, ended, or expired)
	CodeUnknownOperation Code = "unknown_operation" // agent-call names no restricted_api function

	// Workflows.
	CodeInvalidWorkflow Code = "invalid_workflow" // the graph is malformed: a cycle, an unknown dependency, a repeated id, a bad expression
	CodeNotPure         Code = "not_pure"         // a task declared pure imports or does something with a side effect
	// CodeUnsafeOperation: a workflow step names an operation that can
	// never be pure (code evaluation, timers, network, storage, output,
	// async), refused before anything runs, whatever the settings.
	CodeUnsafeOperation  Code = "unsafe_operation"
	CodeDependencyFailed Code = "dependency_failed" // a task did not run because one it depends on failed

	// Workspaces and the shell.
	CodePathNotAllowed  Code = "path_not_allowed"  // a name that leaves the workspace: absolute, "..", a link out, a NUL, a second hard link
	CodeQuotaExceeded   Code = "quota_exceeded"    // the workspace's byte or file quota would be passed
	CodeNotFound        Code = "not_found"         // no such file or directory in the workspace
	CodeShellNotAllowed Code = "shell_not_allowed" // shell syntax or a command the shell does not run (expansions, substitutions, an unknown command)
	// CodeSandboxUnavailable: a program of the system was to run (a high
	// session's command that is not built in) and this host has no
	// sandbox for it: not Linux, no bubblewrap, or user namespaces off.
	CodeSandboxUnavailable Code = "sandbox_unavailable"

	// Sessions and the local viewer.
	CodeUnknownSession Code = "unknown_session"
	CodeInvalidLevel   Code = "invalid_level"
	CodeSessionLevel   Code = "session_level" // the session's permission level does not allow the operation
	CodeAdminPolicy    Code = "admin_policy"  // the administrator's policy (a machine policy file, the extension's managed storage) refuses it, whatever the person granted
	CodeUnauthorized   Code = "unauthorized"  // missing or wrong viewer token, foreign Host or Origin

	// MCP tools (docs/mcp.md).
	CodeToolNotAllowed  Code = "tool_not_allowed" // the agent's profile does not list the tool in capabilities.mcpTools, or the gateway's configuration has no such server or tool
	CodeToolDefinitions Code = "tool_definitions" // a server's tool list is beyond what the gateway takes: too many tools, a name it cannot show exactly, a name listed twice

	// The audit trail, checked against a checkpoint kept outside the host's
	// data dir (audit-consistency; docs/permissions.md, "The audit trail").
	CodeAuditBadSignature Code = "audit_bad_signature" // the checkpoint is not signed by this data dir's key: forged, altered, from elsewhere, or the key was replaced
	CodeAuditTruncated    Code = "audit_truncated"     // the log holds fewer records than the checkpoint signed: records were removed from its end
	CodeAuditInconsistent Code = "audit_inconsistent"  // the log does not extend the checkpoint: records it signed were rewritten
)

// Decision is the outcome of one security check. The zero value denies:
// Allowed is false and Code is empty, which callers report as internal_error.
type Decision struct {
	Allowed bool   `json:"allowed"`
	Code    Code   `json:"code"`
	Reason  string `json:"reason,omitempty"` // a sentence for people
}

// Allow returns an allowing decision.
func Allow(reason string) Decision {
	return Decision{Allowed: true, Code: CodeAllowed, Reason: reason}
}

// Deny returns a denying decision with a reason code and a sentence.
func Deny(code Code, reason string) Decision {
	if code == CodeAllowed || code == "" {
		code = CodeInternal
	}
	return Decision{Code: code, Reason: reason}
}

// Err turns a denying decision into an *Error; it returns nil when allowed.
func (d Decision) Err() error {
	if d.Allowed && d.Code == CodeAllowed {
		return nil
	}
	code := d.Code
	if code == "" || code == CodeAllowed {
		code = CodeInternal
	}
	return &Error{Code: code, Msg: d.Reason}
}

// Error is an error with a reason code. Wrap it with context freely;
// CodeOf finds it again.
type Error struct {
	Code Code
	Msg  string
	Err  error // optional cause
}

func (e *Error) Error() string {
	switch {
	case e.Msg != "" && e.Err != nil:
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Msg, e.Err)
	case e.Msg != "":
		return fmt.Sprintf("%s: %s", e.Code, e.Msg)
	case e.Err != nil:
		return fmt.Sprintf("%s: %v", e.Code, e.Err)
	}
	return string(e.Code)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// CodeOf returns the reason code carried by err, or CodeInternal when err
// carries none. It returns "" for a nil error.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" && e.Code != CodeAllowed {
		return e.Code
	}
	return CodeInternal
}

// MessageOf returns the sentence for people carried by err.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Msg != "" {
		return e.Msg
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// IsRefusal reports whether code refuses something an agent or a caller
// asked for, as opposed to reporting how something allowed turned out (a
// run that trapped or ran out of time, a fetch whose server failed, a
// missing file, a verdict about the audit trail) or the host failing.
// Every refusal reaches the denial log with an audit record, whichever
// layer refused (TestEveryReasonCodeReachesTheDenialLog).
func IsRefusal(code Code) bool {
	switch code {
	case "", CodeAllowed, CodeInternal,
		CodeTimeout, CodeCompileTimeout, CodeTrap, CodeMemoryLimit, CodeCallLimit, CodeExitNonZero,
		CodeUpstreamError, CodeDNSError, CodeNotFound, CodeDependencyFailed,
		CodeAuditBadSignature, CodeAuditTruncated, CodeAuditInconsistent:
		return false
	}
	return true
}

// recorded marks a refusal whose denial is already in the log.
type recorded struct{ error }

func (r recorded) Unwrap() error { return r.error }

// Recorded marks err as a refusal its refuser has already written to the
// denial log, so the layer that reports it does not write it twice.
func Recorded(err error) error {
	if err == nil {
		return nil
	}
	return recorded{err}
}

// IsRecorded reports whether err, or an error it wraps, was marked
// Recorded.
func IsRecorded(err error) bool {
	var r recorded
	return errors.As(err, &r)
}
