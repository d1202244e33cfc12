package mediator

import (
	jsonv2 "github.com/go-json-experiment/json"
)

// DecodeExact decodes untrusted JSON into v the one way every input of the
// host is read (profiles, native messages, the viewer's request bodies):
// member names match exactly, so "NetworkAccess" is not "networkAccess";
// a member given twice, a member v does not have, invalid UTF-8 and
// trailing data are refused. Go's encoding/json matches names without
// regard to case and keeps the last of duplicate members, so a document
// could read one way to a person (or jq, or JSON.parse) and be enforced
// another way; this closes that gap.
func DecodeExact(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, jsonv2.RejectUnknownMembers(true))
}
