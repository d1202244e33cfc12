package viewer

import (
	"bytes"
	"os"
	"testing"
)

// TestCheckpointModuleIsTheExtensions: the page's checkpoint logic is the
// extension's module, byte for byte, so the two checks cannot drift apart
// (a copy because each side ships its files whole: the viewer embeds
// static/, the extension is packaged from extension/).
func TestCheckpointModuleIsTheExtensions(t *testing.T) {
	ext, err := os.ReadFile("../../extension/checkpoint.js")
	if err != nil {
		t.Fatal(err)
	}
	served, err := staticFiles.ReadFile("static/checkpoint.js")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ext, served) {
		t.Fatal("internal/viewer/static/checkpoint.js differs from extension/checkpoint.js: cp extension/checkpoint.js internal/viewer/static/checkpoint.js")
	}
}
