package host

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/agentgate/nmhost/mediator"
	"github.com/agentgate/nmhost/netproxy"
)

// paramsWrappers caches, per parameter type, the struct that reads a whole
// request in one pass: the envelope's id and type beside the parameters,
// which are inlined. Built with reflection once per type.
var paramsWrappers sync.Map // reflect.Type (pointer to params) -> reflect.Type

// decode reads the request's parameters (the request object's own fields
// beside id and type) exactly, in one pass over the message: a member the
// type does not have, a case variant of one it has and a repeated member
// are refused (bad_request), so the host never acts on a reading of the
// message that its sender's JSON.parse would not give. v must be a pointer
// to a struct.
func (r *request) decode(v any) error {
	pt := reflect.TypeOf(v)
	wt, ok := paramsWrappers.Load(pt)
	if !ok {
		wt, _ = paramsWrappers.LoadOrStore(pt, reflect.StructOf([]reflect.StructField{
			{Name: "ID", Type: reflect.TypeFor[jsontext.Value](), Tag: `json:"id"`},
			{Name: "Type", Type: reflect.TypeFor[string](), Tag: `json:"type"`},
			{Name: "Params", Type: pt, Tag: `json:",inline"`},
		}))
	}
	w := reflect.New(wt.(reflect.Type))
	w.Elem().Field(2).Set(reflect.ValueOf(v))
	if err := mediator.DecodeExact(r.Raw, w.Interface()); err != nil {
		return &mediator.Error{Code: mediator.CodeBadRequest, Msg: fmt.Sprintf("%s: parameters do not have the expected names and types", r.Type), Err: err}
	}
	return nil
}

// boundedHeaders are a fetch's request headers, refused while they are
// decoded once they pass netproxy's limits: a frame of a million tiny
// headers would otherwise become a map of a million entries, many times
// the frame's size, before any check could see it.
type boundedHeaders map[string]string

// UnmarshalJSONFrom reads the headers object member by member.
func (h *boundedHeaders) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	if dec.PeekKind() == 'n' {
		_, err := dec.ReadToken()
		*h = nil
		return err
	}
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != '{' {
		return fmt.Errorf("headers must be an object of strings")
	}
	m := boundedHeaders{}
	total := 0
	for dec.PeekKind() != '}' {
		// A token is valid only until the next read: take the name first.
		tok, err := dec.ReadToken()
		if err != nil {
			return err
		}
		name := tok.String()
		if tok, err = dec.ReadToken(); err != nil {
			return err
		}
		if tok.Kind() != '"' {
			return fmt.Errorf("header %q must be a string", mediator.Truncate(name, 64))
		}
		value := tok.String()
		total += len(name) + len(value)
		if len(m) >= netproxy.MaxHeaders || total > netproxy.MaxHeaderBytes {
			return mediator.Errorf(mediator.CodeTooLarge, "more than %d headers or %d bytes of them", netproxy.MaxHeaders, netproxy.MaxHeaderBytes)
		}
		m[name] = value
	}
	if _, err := dec.ReadToken(); err != nil {
		return err
	}
	*h = m
	return nil
}
