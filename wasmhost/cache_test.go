package wasmhost

import (
	"context"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// TestRunsFindTheCompiledModuleByItsRecordedHash: once a module is
// compiled, a run whose record names its hash runs that module without
// hashing the bytes again, so bytes swapped in behind the record never
// run; bytes that do not match a hash not yet compiled are refused; and a
// profile's pin still decides.
func TestRunsFindTheCompiledModuleByItsRecordedHash(t *testing.T) {
	ok := wmodule{start: []byte{0x01}}.bytes()                // nop: exits cleanly
	trap := wmodule{start: []byte{0x00}}.bytes()              // unreachable: traps
	other := wmodule{start: []byte{0x01, 0x01, 0x01}}.bytes() // never compiled
	f := newFixture(t)
	rt := sharedRuntime()
	for _, c := range []struct {
		name     string
		recorded string // the record's ModuleSHA256
		pin      string // the profile's pin
		module   []byte
		want     mediator.Code // "" runs cleanly
	}{
		{"first run compiles it", shaOf(ok), "", ok, ""},
		{"later run with the same bytes", shaOf(ok), "", ok, ""},
		{"swapped bytes behind a compiled hash run the compiled module", shaOf(ok), "", trap, ""},
		{"no bytes at all behind a compiled hash", shaOf(ok), "", nil, ""},
		{"bytes that do not match an uncompiled hash", shaOf(other), "", trap, mediator.CodeHashMismatch},
		{"a pin the compiled module does not match", shaOf(ok), shaOf(other), ok, mediator.CodeHashMismatch},
		{"no recorded hash: the bytes are hashed", "", "", trap, mediator.CodeTrap},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := f.install(t, "cached", nil, mediator.Capabilities{})
			rec.ModuleSHA256, rec.Profile.ModuleSHA256 = c.recorded, c.pin
			res, err := rt.Run(context.Background(), f.spec(rec, c.module, ""))
			if err != nil {
				t.Fatal(err)
			}
			if res.Code != c.want {
				t.Fatalf("code %q (%s); want %q", res.Code, res.Error, c.want)
			}
		})
	}
}
