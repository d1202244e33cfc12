package shown

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json from this package's digests")

// vector is one value and its digest. testdata/vectors.json holds them;
// the extension's shown.js is checked against the same file in real
// Chromium (e2e TestShownDigestIsTheHosts), so both sides agree.
type vector struct {
	Name   string          `json:"name"`
	Value  json.RawMessage `json:"value"`
	Digest string          `json:"digest"`
}

// TestDigestOfAHandEncodedValue: the encoding is the one the doc comment
// and docs/protocol.md write down, checked against a hand-written form.
func TestDigestOfAHandEncodedValue(t *testing.T) {
	raw := `{"b":[1,-2,true,null],"a":"h\u00e9","":false}`
	hand := prefix + `o3:` + `s0:f` + `s1:as3:h` + "\xc3\xa9" + `s1:ba4:d1;d-2;tn`
	sum := sha256.Sum256([]byte(hand))
	got, err := Digest([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("Digest(%s) = %s; want %s (of %q)", raw, got, want, hand)
	}
}

func TestDigestRefuses(t *testing.T) {
	for _, c := range []struct{ name, raw string }{
		{"a fraction", `{"a":1.5}`},
		{"an exponent", `[1e3]`},
		{"past 2^53-1", `[9007199254740992]`},
		{"not JSON", `{"a":`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if d, err := Digest([]byte(c.raw)); err == nil {
				t.Fatalf("Digest(%s) = %s; want an error", c.raw, d)
			}
		})
	}
}

// TestDigestIgnoresOrderAndEscapes: the same value written in another
// member order or with other escapes has the same digest; any change of
// a value, a name or a type has another.
func TestDigestIgnoresOrderAndEscapes(t *testing.T) {
	base := `{"agentId":"a<b","target":{"url":"http://127.0.0.1/","textLength":3},"offers":["allow-once","deny"]}`
	same := []string{
		`{"offers":["allow-once","deny"],"target":{"textLength":3,"url":"http://127.0.0.1/"},"agentId":"a\u003cb"}`,
		" \n" + base,
	}
	other := []string{
		`{"agentId":"a<b","target":{"url":"http://127.0.0.1/","textLength":4},"offers":["allow-once","deny"]}`,
		`{"agentId":"a<b","target":{"url":"http://127.0.0.1/","textLength":"3"},"offers":["allow-once","deny"]}`,
		`{"agentId":"a<b","target":{"url":"http://127.0.0.1/","textLength":3},"offers":["deny","allow-once"]}`,
		`{"agentId":"a<b","target":{"URL":"http://127.0.0.1/","textLength":3},"offers":["allow-once","deny"]}`,
		`{"agentId":"a<b","target":{"url":"http://127.0.0.1/","textLength":3},"offers":["allow-once","deny"],"x":null}`,
	}
	d0 := mustDigest(t, base)
	for i, s := range same {
		if d := mustDigest(t, s); d != d0 {
			t.Errorf("same value %d: %s; want %s", i, d, d0)
		}
	}
	for i, s := range other {
		if d := mustDigest(t, s); d == d0 {
			t.Errorf("changed value %d has the base's digest", i)
		}
	}
}

// TestVectors: testdata/vectors.json holds this package's digests; the
// e2e test computes them with shown.js in Chromium.
func TestVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(raw, &vs); err != nil {
		t.Fatal(err)
	}
	if len(vs) < 5 {
		t.Fatalf("only %d vectors", len(vs))
	}
	for i := range vs {
		v := &vs[i]
		t.Run(v.Name, func(t *testing.T) {
			d := mustDigest(t, string(v.Value))
			if *update {
				v.Digest = d
			}
			if d != v.Digest {
				t.Fatalf("digest %s; the file says %s", d, v.Digest)
			}
		})
	}
	if *update {
		out, _ := json.MarshalIndent(vs, "", "  ")
		if err := os.WriteFile("testdata/vectors.json", append(out, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func mustDigest(t *testing.T, raw string) string {
	t.Helper()
	d, err := Digest([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return d
}
