//go:build wasip1

package agent

import (
	"encoding/json"
	"unsafe"
)

//go:wasmimport restricted_api abi_version
func abiVersion() int32

//go:wasmimport restricted_api input
func rawInput() int32

//go:wasmimport restricted_api result
func rawResult(ptr, n uint32) int32

//go:wasmimport restricted_api log
func rawLog(ptr, n uint32) int32

//go:wasmimport restricted_api page_query_selector
func rawQuerySelector(ptr, n uint32) int32

//go:wasmimport restricted_api page_query_selector_all
func rawQuerySelectorAll(ptr, n uint32, limit int32) int32

//go:wasmimport restricted_api page_get_text
func rawGetPageText() int32

//go:wasmimport restricted_api page_set_element_text
func rawSetElementText(selPtr, selLen, textPtr, textLen uint32) int32

//go:wasmimport restricted_api clipboard_read
func rawClipboardRead() int32

//go:wasmimport restricted_api clipboard_write
func rawClipboardWrite(ptr, n uint32) int32

//go:wasmimport restricted_api notify
func rawNotify(titlePtr, titleLen, msgPtr, msgLen uint32) int32

//go:wasmimport restricted_api fetch
func rawFetch(ptr, n uint32) int32

//go:wasmimport restricted_api shell
func rawShell(ptr, n uint32) int32

//go:wasmimport restricted_api memory_write
func rawMemoryWrite(ptr, n uint32) int32

//go:wasmimport restricted_api memory_search
func rawMemorySearch(ptr, n uint32) int32

// ABIVersion is the host's restricted API version.
func ABIVersion() int { return int(abiVersion()) }

// ptr returns the address and length of b for the host. The wasm heap does
// not move, so the address stays valid for the duration of the call.
func ptr(b []byte) (uint32, uint32) {
	if len(b) == 0 {
		return 0, 0
	}
	return uint32(uintptr(unsafe.Pointer(&b[0]))), uint32(len(b))
}

// take turns a call's status into its result bytes or an *Error.
func take(status int32) ([]byte, error) {
	n := status
	if n < 0 {
		n = -n
	}
	buf := make([]byte, n)
	if n > 0 {
		p, l := ptr(buf)
		rawResult(p, l)
	}
	if status >= 0 {
		return buf, nil
	}
	e := &Error{}
	if json.Unmarshal(buf, e) != nil {
		e.Code, e.Message = "internal_error", string(buf)
	}
	return nil, e
}

// Error is a refused or failed call, with the protocol's reason code.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"error"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Input returns the run's input.
func Input() []byte {
	b, _ := take(rawInput())
	return b
}

// Log writes a line to the run's output (console.log).
func Log(msg string) error {
	p, n := ptr([]byte(msg))
	_, err := take(rawLog(p, n))
	return err
}

// QuerySelector returns the first element matching selector (page.read)
// as JSON: {"found", "text", "tag", "attributes"}.
func QuerySelector(selector string) (json.RawMessage, error) {
	p, n := ptr([]byte(selector))
	return take(rawQuerySelector(p, n))
}

// QuerySelectorAll returns up to limit matching elements (page.read) as
// JSON: {"elements": [...]}.
func QuerySelectorAll(selector string, limit int) (json.RawMessage, error) {
	p, n := ptr([]byte(selector))
	return take(rawQuerySelectorAll(p, n, int32(limit)))
}

// PageText returns the page's text (page.read) as JSON: {"text", "url", "title"}.
func PageText() (json.RawMessage, error) { return take(rawGetPageText()) }

// SetElementText replaces the text of the first element matching selector
// (page.write; needs domAccess full and usually the user's confirmation).
func SetElementText(selector, text string) error {
	sp, sn := ptr([]byte(selector))
	tp, tn := ptr([]byte(text))
	_, err := take(rawSetElementText(sp, sn, tp, tn))
	return err
}

// ClipboardRead returns the clipboard's text (clipboard.read; always asks).
func ClipboardRead() (string, error) {
	b, err := take(rawClipboardRead())
	if err != nil {
		return "", err
	}
	var r struct {
		Text string `json:"text"`
	}
	err = json.Unmarshal(b, &r)
	return r.Text, err
}

// ClipboardWrite puts text on the clipboard (clipboard.write).
func ClipboardWrite(text string) error {
	p, n := ptr([]byte(text))
	_, err := take(rawClipboardWrite(p, n))
	return err
}

// Notify shows a system notification (notifications).
func Notify(title, message string) error {
	tp, tn := ptr([]byte(title))
	mp, mn := ptr([]byte(message))
	_, err := take(rawNotify(tp, tn, mp, mn))
	return err
}

// FetchRequest is an HTTP request (network.fetch).
type FetchRequest struct {
	URL          string            `json:"url"`
	Method       string            `json:"method,omitempty"`
	Headers      map[string]string `json:"headers,omitempty"`
	Body         string            `json:"body,omitempty"`
	BodyEncoding string            `json:"bodyEncoding,omitempty"`
}

// FetchResponse is the answer; Body is base64 when BodyEncoding says so.
type FetchResponse struct {
	Status       int                 `json:"status"`
	StatusText   string              `json:"statusText"`
	Headers      map[string][]string `json:"headers"`
	Body         string              `json:"body"`
	BodyEncoding string              `json:"bodyEncoding"`
	FinalURL     string              `json:"finalUrl"`
	Redirects    []string            `json:"redirects"`
}

// Fetch performs req through the host, under the agent's allowedHosts.
func Fetch(req FetchRequest) (*FetchResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	p, n := ptr(b)
	out, err := take(rawFetch(p, n))
	if err != nil {
		return nil, err
	}
	var resp FetchResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Shell runs a command line of the session shell in the run's workspace
// (shell): ls, cat, head, tail, wc, grep, find, mkdir, touch, cp, mv, rm,
// echo and pwd, written in the host and never a process. Each command is
// decided at the session's level; it returns what the line printed, or
// the *Error of the first command refused or failed.
func Shell(command string) (string, error) {
	p, n := ptr([]byte(command))
	out, err := take(rawShell(p, n))
	if err != nil {
		return "", err
	}
	var r struct {
		Output string `json:"output"`
	}
	err = json.Unmarshal(out, &r)
	return r.Output, err
}

// MemoryWrite keeps text, with up to 8 tags (1-32 bytes of a-z, 0-9, '-'
// and '_'), in the session's memory for its later runs, and returns the
// entry's id (memory; the session must be high). Text is at most 4 KiB.
func MemoryWrite(text string, tags []string) (int64, error) {
	b, err := json.Marshal(struct {
		Text string   `json:"text"`
		Tags []string `json:"tags"`
	}{text, tags})
	if err != nil {
		return 0, err
	}
	p, n := ptr(b)
	out, err := take(rawMemoryWrite(p, n))
	if err != nil {
		return 0, err
	}
	var r struct {
		ID int64 `json:"id"`
	}
	err = json.Unmarshal(out, &r)
	return r.ID, err
}

// MemoryHit is one entry a memory search found: a snippet of its text
// with the matched words in [brackets], its tags, and its place in the
// ranking (1 is the best).
type MemoryHit struct {
	ID      int64    `json:"id"`
	Snippet string   `json:"snippet"`
	Tags    []string `json:"tags"`
	Rank    int      `json:"rank"`
}

// MemorySearch returns up to limit (1-50; 0 for 10) entries of the
// session's memory that hold every word of query, best first (memory;
// the session must be medium or high). The query is words, never search
// syntax.
func MemorySearch(query string, limit int) ([]MemoryHit, error) {
	b, err := json.Marshal(struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}{query, limit})
	if err != nil {
		return nil, err
	}
	p, n := ptr(b)
	out, err := take(rawMemorySearch(p, n))
	if err != nil {
		return nil, err
	}
	var r struct {
		Results []MemoryHit `json:"results"`
	}
	err = json.Unmarshal(out, &r)
	return r.Results, err
}

//go:wasmimport restricted_api mcp_call
func rawMCPCall(ptr, n uint32) int32

// MCPCall calls tool of the MCP server the person configured as server
// (mcp.call, and the tool in the profile's capabilities.mcpTools), with
// args (a JSON object, or nil), and returns the tool's result as MCP
// gives it: {"content": [...], "structuredContent", "isError"}
// (docs/mcp.md).
func MCPCall(server, tool string, args any) (json.RawMessage, error) {
	a, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	if args == nil {
		a = []byte("{}")
	}
	b, err := json.Marshal(struct {
		Server string          `json:"server"`
		Tool   string          `json:"tool"`
		Args   json.RawMessage `json:"args"`
	}{server, tool, a})
	if err != nil {
		return nil, err
	}
	p, n := ptr(b)
	return take(rawMCPCall(p, n))
}
