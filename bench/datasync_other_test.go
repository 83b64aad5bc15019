//go:build !linux

package bench

import "os"

// datasync is a full fsync where there is no fdatasync.
func datasync(f *os.File) error { return f.Sync() }
