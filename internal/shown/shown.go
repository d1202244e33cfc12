package shown

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// prefix names the encoding, so a digest of something else never equals
// one of a prompt.
const prefix = "agentgate-prompt-shown-v1\n"

// maxSafe is the largest integer a JavaScript number holds exactly: the
// window reads every number as one.
const maxSafe = 1<<53 - 1

// Of is the digest of v as the window receives it: v encoded to JSON and
// read back, as the browser reads a native message.
func Of(v any) (string, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	return Digest(raw)
}

// Digest is the digest of the JSON value raw: SHA-256, in lowercase hex,
// of prefix and the value's canonical encoding (see encode).
func Digest(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", fmt.Errorf("shown: %w", err)
	}
	var b bytes.Buffer
	b.WriteString(prefix)
	if err := encode(&b, v); err != nil {
		return "", err
	}
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

// encode writes v's canonical form: one that both Go and JavaScript
// produce from the same JSON, whatever order and escapes the JSON used.
//
//	null "n", true "t", false "f"
//	an integer: "d", its base-10 digits, ";" (other numbers are refused)
//	a string: "s", its UTF-8 length, ":", its UTF-8 bytes
//	an array: "a", its length, ":", each element
//	an object: "o", its member count, ":", each name (as a string) and
//	value, names in the order of their UTF-8 bytes
func encode(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteByte('n')
	case bool:
		if x {
			b.WriteByte('t')
		} else {
			b.WriteByte('f')
		}
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 64)
		if err != nil || n > maxSafe || n < -maxSafe {
			return errors.New("shown: only integers of at most 2^53-1 are encoded, not " + string(x))
		}
		b.WriteByte('d')
		b.WriteString(strconv.FormatInt(n, 10))
		b.WriteByte(';')
	case string:
		str(b, x)
	case []any:
		b.WriteByte('a')
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteByte(':')
		for _, e := range x {
			if err := encode(b, e); err != nil {
				return err
			}
		}
	case map[string]any:
		b.WriteByte('o')
		b.WriteString(strconv.Itoa(len(x)))
		b.WriteByte(':')
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // Go compares strings by their bytes
		for _, k := range keys {
			str(b, k)
			if err := encode(b, x[k]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("shown: cannot encode %T", v)
	}
	return nil
}

func str(b *bytes.Buffer, s string) {
	b.WriteByte('s')
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}
