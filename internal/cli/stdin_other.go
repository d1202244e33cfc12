//go:build !unix

package cli

import (
	"context"
	"io"
	"os"
)

// stdinPollable: Windows' console and pipe handles are not switched; the
// host reads them through untilDone's goroutine.
func stdinPollable(context.Context, *os.File) (io.Reader, func(), bool) {
	return nil, nil, false
}
