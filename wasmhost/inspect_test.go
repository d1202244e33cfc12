package wasmhost

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentgate/nmhost/mediator"
)

// importOf is the import of restricted API function name with its
// signature.
func importOf(name string) wimport {
	i := slices.IndexFunc(hostFuncs, func(h hostFunc) bool { return h.name == name })
	return wimport{module: HostModule, name: name, params: hostFuncs[i].params, results: []byte{0x7f}}
}

func wasi(name string, params ...byte) wimport {
	return wimport{module: wasiModule, name: name, params: params, results: []byte{0x7f}}
}

// callAndDrop calls function f with zeros for its n i32 parameters.
func callAndDrop(f uint32, n int) []byte {
	var b []byte
	for range n {
		b = append(b, i32const(0)...)
	}
	return append(append(b, call(f)...), 0x1a)
}

func TestInspect(t *testing.T) {
	fetch, log, notify, clipr := importOf("fetch"), importOf("log"), importOf("notify"), importOf("clipboard_read")
	for _, tc := range []struct {
		name       string
		module     wmodule
		set        mediator.PermissionSet
		confidence float64
		pure       bool
		reason     string // a reason that must be given
		refused    bool
	}{
		{"nothing imported", wmodule{}, mediator.SetMinimal, 1, true, "pure work", false},
		{"log and compute-only WASI", wmodule{imports: []wimport{log, wasi("random_get", 0x7f, 0x7f)}, start: callAndDrop(0, 2)},
			mediator.SetMinimal, 1, true, "pure work", false},
		{"fetch, called", wmodule{imports: []wimport{log, fetch}, start: callAndDrop(1, 2)},
			mediator.SetNetworkAPI, 1, false, "every import is called by name", false},
		{"fetch, imported but never referenced", wmodule{imports: []wimport{log, fetch}, start: callAndDrop(0, 2)},
			mediator.SetNetworkAPI, 0.5, false, "never references restricted_api.fetch", false},
		{"log unused is harmless", wmodule{imports: []wimport{log, fetch}, start: callAndDrop(1, 2)},
			mediator.SetNetworkAPI, 1, false, "", false},
		{"fetch only through a table", wmodule{imports: []wimport{fetch}, tables: []wtable{{1, 1}}, elems: [][]byte{elemSeg(0, 1)},
			start: []byte{0x41, 0x00, 0x41, 0x00, 0x41, 0x00, 0x11, 0x00, 0x00, 0x1a}},
			mediator.SetNetworkAPI, 0.8, false, "only through a function table", false},
		{"notify and clipboard read", wmodule{imports: []wimport{notify, clipr}, start: append(callAndDrop(0, 4), callAndDrop(1, 0)...)},
			mediator.SetTrusted, 1, false, "trusted is the smallest set", false},
		{"an instruction the inspector does not read", wmodule{imports: []wimport{fetch}, start: append(callAndDrop(0, 2), 0xfe, 0x00)},
			mediator.SetNetworkAPI, 0.5, false, "cannot read function body", false},
		{"shell, called", wmodule{imports: []wimport{log, importOf("shell")}, start: callAndDrop(1, 2)},
			mediator.SetReadonly, 1, false, "readonly is the smallest set", false},
		{"shell and a workspace write", wmodule{imports: []wimport{importOf("shell"), wasi("path_create_directory", 0x7f, 0x7f, 0x7f)}, start: append(callAndDrop(0, 2), callAndDrop(1, 3)...)},
			mediator.SetFilesystem, 1, false, "filesystem is the smallest set", false},
		// An import the code never references does not raise the set:
		// the reading is unsure (0.5), so an inferred set falls back to
		// minimal and the write function is never linked.
		{"an unused fd_pwrite", wmodule{imports: []wimport{importOf("shell"), wasi("fd_pwrite", 0x7f, 0x7f, 0x7f, 0x7e, 0x7f)}, start: callAndDrop(0, 2)},
			mediator.SetFilesystem, 0.5, false, "never references wasi_snapshot_preview1.fd_pwrite (workspace.write)", false},
		{"an unused path_open", wmodule{imports: []wimport{log, wasi("path_open", 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7e, 0x7e, 0x7f, 0x7f)}, start: callAndDrop(0, 2)},
			mediator.SetReadonly, 0.5, false, "never references wasi_snapshot_preview1.path_open (workspace.read)", false},
		{"path_open, called", wmodule{imports: []wimport{wasi("path_open", 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7e, 0x7e, 0x7f, 0x7f)}, start: callAndDrop(0, 9)},
			mediator.SetReadonly, 0.8, false, "path_open may open a file for writing", false},
		{"an import no set links", wmodule{imports: []wimport{wasi("sock_accept", 0x7f, 0x7f, 0x7f)}},
			mediator.SetMinimal, 0, false, "no permission set links it", true},
		{"an imported memory", wmodule{imports: []wimport{{module: "env", name: "memory", memory: true, memMin: 1}}},
			mediator.SetMinimal, 0, false, "no permission set links it", true},
		{"a made-up restricted function", wmodule{imports: []wimport{{module: HostModule, name: "spawn", results: []byte{0x7f}}}},
			mediator.SetMinimal, 0, false, "not a function of the restricted API", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Inspect(tc.module.bytes())
			if err != nil {
				t.Fatal(err)
			}
			if in.Set != tc.set || in.Confidence != tc.confidence || in.Pure != tc.pure || (in.Refused != "") != tc.refused {
				t.Fatalf("got %s %.2f pure=%v refused=%q; want %s %.2f pure=%v\n%s", in.Set, in.Confidence, in.Pure, in.Refused, tc.set, tc.confidence, tc.pure, strings.Join(in.Reasons, "\n"))
			}
			if !strings.Contains(strings.Join(in.Reasons, "\n"), tc.reason) {
				t.Fatalf("reasons lack %q:\n%s", tc.reason, strings.Join(in.Reasons, "\n"))
			}
		})
	}
}

// TestInspectRefusesWhatValidateRefuses: the inspector reads nothing
// validate has not bounded first.
func TestInspectRefusesWhatValidateRefuses(t *testing.T) {
	for name, tc := range map[string]struct {
		module []byte
		code   mediator.Code
	}{
		"not wasm":        {[]byte("#!/bin/sh\n"), mediator.CodeInvalidModule},
		"cut short":       {wmodule{imports: []wimport{importOf("fetch")}}.bytes()[:30], mediator.CodeInvalidModule},
		"too many locals": {wmodule{locals: []uint32{maxFuncLocals + 1}}.bytes(), mediator.CodeModuleLimits},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Inspect(tc.module); mediator.CodeOf(err) != tc.code {
				t.Fatalf("%v; want %s", err, tc.code)
			}
		})
	}
}

// TestInspectProbe: a real Go agent, every import called by name.
func TestInspectProbe(t *testing.T) {
	in, err := Inspect(probeWasm)
	if err != nil {
		t.Fatal(err)
	}
	if in.Set != mediator.SetTrusted || in.Confidence != 1 || in.Pure {
		t.Fatalf("%+v", in.SetInference)
	}
	for _, im := range in.Imports {
		if im.Use != "call" {
			t.Errorf("%s.%s: use %s", im.Module, im.Name, im.Use)
		}
	}
}

// BenchmarkInspect reads a Go agent's imports and every instruction of its
// code, beside validate alone on the same bytes.
func BenchmarkInspect(b *testing.B) {
	b.Run("validate", func(b *testing.B) {
		b.SetBytes(int64(len(probeWasm)))
		for b.Loop() {
			if _, err := validate(probeWasm); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("inspect", func(b *testing.B) {
		b.SetBytes(int64(len(probeWasm)))
		for b.Loop() {
			if _, err := Inspect(probeWasm); err != nil {
				b.Fatal(err)
			}
		}
	})
}
