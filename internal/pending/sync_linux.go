package pending

import (
	"os"
	"syscall"
)

// datasync flushes f's data, and only the metadata needed to read it back:
// for a segment whose size never changes, not the inode.
func datasync(f *os.File) error {
	conn, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := conn.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
