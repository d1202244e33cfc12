package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentgate/nmhost/mediator"
)

// parseRequest parses the envelope once. On error it still returns the
// request with whatever id could be read, so the reply can echo it.
func parseRequest(msg []byte) (*request, error) {
	if len(msg) == 0 {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "empty message")
	}
	if !utf8.Valid(msg) {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "message is not valid UTF-8")
	}
	trimmed := bytes.TrimLeft(msg, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, mediator.Errorf(mediator.CodeBadRequest, "message is not a JSON object")
	}
	env, err := readEnvelope(msg)
	if err != nil {
		return nil, &mediator.Error{Code: mediator.CodeBadRequest, Msg: "message is not valid JSON (or repeats id or type)", Err: err}
	}
	req := &request{ID: nullID, Raw: msg}
	if len(env.ID) == 0 || string(env.ID) == "null" {
		return req, mediator.Errorf(mediator.CodeBadRequest, "message has no id")
	}
	if !validID(env.ID) {
		return req, mediator.Errorf(mediator.CodeBadRequest, "id must be a string of at most 128 bytes or an integer")
	}
	req.ID = env.ID
	if len(env.Type) == 0 || env.Type[0] != '"' {
		return req, mediator.Errorf(mediator.CodeBadRequest, "message has no type string")
	}
	// The decoder has checked the string's syntax: unquoting cannot fail.
	typ, err := jsontext.AppendUnquote(nil, env.Type)
	if err != nil || len(typ) == 0 {
		return req, mediator.Errorf(mediator.CodeBadRequest, "message has no type string")
	}
	req.Type = string(typ)
	return req, nil
}

// envelope is a request's id and type, as raw JSON.
type envelope struct{ ID, Type json.RawMessage }

// decoders recycles the envelope reader's decoder: its state is several
// hundred bytes, which every request would otherwise allocate.
var decoders = sync.Pool{New: func() any { return jsontext.NewDecoder(bytes.NewBuffer(nil), jsontext.AllowDuplicateNames(true)) }}

// readEnvelope reads the top-level id and type of msg in one streaming
// pass, skipping (and so checking the syntax of) every other member
// without holding it: a frame of a million nested members costs no more
// than its bytes. A repeated id or type is refused here; repeated or
// case-variant members elsewhere are refused where the parameters are
// decoded exactly (decode), which stops at the first one.
func readEnvelope(msg []byte) (envelope, error) {
	dec := decoders.Get().(*jsontext.Decoder)
	// A bytes.Buffer is read in place, without a copy of the message.
	dec.Reset(bytes.NewBuffer(msg), jsontext.AllowDuplicateNames(true))
	env, err := readEnvelopeFrom(dec)
	dec.Reset(bytes.NewBuffer(nil)) // holds nothing of msg while pooled
	decoders.Put(dec)
	return env, err
}

func readEnvelopeFrom(dec *jsontext.Decoder) (envelope, error) {
	var env envelope
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return env, errors.New("not a JSON object")
	}
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return env, err
		}
		var dst *json.RawMessage
		switch tok.String() {
		case "id":
			dst = &env.ID
		case "type":
			dst = &env.Type
		default:
			if err := dec.SkipValue(); err != nil {
				return env, err
			}
			continue
		}
		if *dst != nil {
			return env, fmt.Errorf("member %q given twice", tok.String())
		}
		v, err := dec.ReadValue()
		if err != nil {
			return env, err
		}
		*dst = json.RawMessage(bytes.Clone(v))
	}
	if _, err := dec.ReadToken(); err != nil {
		return env, err
	}
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		return env, errors.New("data after the object")
	}
	return env, nil
}

// validID accepts a string of at most 128 bytes (unescaped) or an integer.
// The decoder has checked the value's syntax, so a string only needs its
// unescaped length, which AppendUnquote gives without reflection.
func validID(raw json.RawMessage) bool {
	if raw[0] == '"' {
		var buf [160]byte
		s, err := jsontext.AppendUnquote(buf[:0], raw)
		return err == nil && len(s) <= 128
	}
	_, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil
}
