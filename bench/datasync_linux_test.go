package bench

import (
	"os"
	"syscall"
)

// datasync is fdatasync(2), as questiond's write-ahead log syncs.
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
