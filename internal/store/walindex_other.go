//go:build !unix

package store

// walIndex is not mapped here: every decision asks PRAGMA data_version.
type walIndex struct{}

const walIndexHeader = 96

const walIndexMapped = false

func openWALIndex(string) *walIndex { return nil }

func (w *walIndex) header() (h [walIndexHeader]byte) { return h }

func (w *walIndex) close() {}
