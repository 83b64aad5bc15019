//go:build !unix

package bridge

import (
	"io"
	"os"
)

// pollable: elsewhere than on Unix, the bridge reads its stdin on a
// goroutine of its own.
func pollable(*os.File) (*os.File, bool) { return nil, false }

// rawFile is f.
func rawFile(f *os.File) io.ReadWriter { return f }
