package cli

import (
	"slices"
	"strings"

	"github.com/agentgate/nmhost/mediator"
)

// knownCodes are the reason codes a denial record can carry, for checking
// --code. TestKnownCodesMatchMediator keeps the list equal to the
// constants in mediator/codes.go.
var knownCodes = []mediator.Code{
	mediator.CodeBadRequest, mediator.CodeUnknownType, mediator.CodeOriginNotAllowed, mediator.CodeTooLarge,
	mediator.CodeTimeout, mediator.CodeInternal,
	mediator.CodeUnknownAgent, mediator.CodeInvalidProfile, mediator.CodeInvalidAllowedHost, mediator.CodeHashMismatch,
	mediator.CodePermissionNotGranted, mediator.CodeUnknownPermission, mediator.CodeRevokedByUser,
	mediator.CodePermissionOutsideSet, mediator.CodeSetFallback,
	mediator.CodeNetworkDisabled, mediator.CodeHostNotAllowed, mediator.CodePrivateAddress, mediator.CodeSchemeNotAllowed,
	mediator.CodeNonCanonicalHost, mediator.CodeInvalidURL, mediator.CodeHeaderNotAllowed, mediator.CodeTooManyRedirects,
	mediator.CodeUpstreamError, mediator.CodeDNSError, mediator.CodeMethodNotAllowed, mediator.CodeBodyNotAllowed,
	mediator.CodeNoBrowser, mediator.CodeUserDenied, mediator.CodeBlockedByUser, mediator.CodePromptTimeout, mediator.CodePromptCancelled,
	mediator.CodeConfirmRequired, mediator.CodeAnswerNotOffered, mediator.CodeAnswerMismatch, mediator.CodePageChanged,
	mediator.CodeInvalidModule, mediator.CodeModuleLimits, mediator.CodeImportNotGranted, mediator.CodeTrap, mediator.CodeMemoryLimit,
	mediator.CodeCallLimit, mediator.CodeExitNonZero, mediator.CodeMemoryBusy, mediator.CodeCompileTimeout,
	mediator.CodeWrongRuntime, mediator.CodeUnknownRun, mediator.CodeUnknownOperation,
	mediator.CodeInvalidWorkflow, mediator.CodeNotPure, mediator.CodeUnsafeOperation, mediator.CodeDependencyFailed,
	mediator.CodePathNotAllowed, mediator.CodeQuotaExceeded, mediator.CodeNotFound, mediator.CodeShellNotAllowed, mediator.CodeSandboxUnavailable,
	mediator.CodeUnknownSession, mediator.CodeInvalidLevel, mediator.CodeSessionLevel, mediator.CodeUnauthorized, mediator.CodeAdminPolicy,
	mediator.CodeAuditBadSignature, mediator.CodeAuditTruncated, mediator.CodeAuditInconsistent,
	mediator.CodeToolNotAllowed, mediator.CodeToolDefinitions,
}

// deniablePermissions are the values a denial's permission holds: the
// permissions, and "native-messaging" for callers the host refuses.
func deniablePermissions() []string {
	out := []string{}
	for _, p := range mediator.KnownPermissions() {
		out = append(out, string(p))
	}
	return append(out, "native-messaging")
}

func codeNames() []string {
	out := make([]string, len(knownCodes))
	for i, c := range knownCodes {
		out[i] = string(c)
	}
	slices.Sort(out)
	return out
}

func permissionNames() string {
	out := []string{}
	for _, p := range mediator.KnownPermissions() {
		out = append(out, string(p))
	}
	return strings.Join(out, ", ")
}
