package host

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// jsFile reads an extension file.
func jsFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("../../extension/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// quoted returns the single-quoted strings of s.
func quoted(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`'([a-zA-Z-]+)'`).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// between returns the text of s from the first start to the next end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	_, rest, ok := strings.Cut(s, start)
	if !ok {
		t.Fatalf("no %q", start)
	}
	body, _, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("no %q after %q", end, start)
	}
	return body
}

// TestWireVocabularyMatchesTheExtension: the message types the extension
// sends are the ones the host handles, and the ones the host sends it
// (requests it answers, notices it takes) are the ones it knows, read from
// both sides' own tables, so neither can add a type the other ignores.
func TestWireVocabularyMatchesTheExtension(t *testing.T) {
	// What the extension sends: the pages' requests it forwards, and the
	// requests the service worker makes itself.
	sent := map[string]bool{}
	for _, typ := range quoted(between(t, jsFile(t, "router.js"), "const PAGE_REQUESTS = new Set([", "]);")) {
		sent[typ] = true
	}
	entries, err := os.ReadDir("../../extension")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`(?:request|ask)\('([a-zA-Z-]+)'`)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".js") {
			continue
		}
		for _, m := range call.FindAllStringSubmatch(jsFile(t, e.Name()), -1) {
			sent[m[1]] = true
		}
	}
	for typ := range sent {
		if _, ok := handlers[typ]; !ok {
			t.Errorf("the extension sends %q, which the host does not handle", typ)
		}
	}
	for typ := range handlers {
		if !sent[typ] && !strings.HasPrefix(typ, "test-") { // test-: added by this package's tests
			t.Errorf("the host handles %q, which the extension never sends", typ)
		}
	}

	// What the host sends: requests the extension answers with a result
	// type, and notices it takes.
	native := jsFile(t, "native.js")
	answers := map[string]string{}
	pair := regexp.MustCompile(`'?([a-zA-Z-]+)'?\s*:\s*'([a-zA-Z-]+)'`)
	for _, m := range pair.FindAllStringSubmatch(between(t, native, "const RESULT_TYPES = {", "};"), -1) {
		answers[m[1]] = m[2]
	}
	for result, request := range resultTypes {
		if answers[request] != result {
			t.Errorf("the host expects %q to answer %q; the extension answers it with %q", result, request, answers[request])
		}
	}
	if len(answers) != len(resultTypes) {
		t.Errorf("the extension answers %v; the host asks %v", slices.Sorted(maps.Keys(answers)), slices.Sorted(maps.Values(resultTypes)))
	}
	notices := quoted(between(t, native, "const NOTICES = new Set([", "]);"))
	if !slices.Equal(notices, []string{"prompt-cancel"}) {
		t.Errorf("the extension takes the notices %v; the host sends prompt-cancel", notices)
	}
	// Both speak the same version of the protocol.
	if v := strings.TrimSpace(between(t, native, "export const PROTOCOL =", ";")); v != strconv.Itoa(ProtocolVersion) {
		t.Errorf("the extension speaks protocol %s; the host %d", v, ProtocolVersion)
	}
}
