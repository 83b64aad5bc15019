//go:build unix

package bridge

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// pollable returns a copy of f, a pipe or a socket, in the runtime's
// poller, so that closing it interrupts a read: the bridge's stdin is
// blocking as a host's process launcher hands it over. The copy shares the
// open file (non-blocking now), which only the bridge reads. Terminals and
// files stay as they are (false).
func pollable(f *os.File) (*os.File, bool) {
	info, err := f.Stat()
	if err != nil || info.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil, false
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, false
	}
	dup, dupErr := -1, error(nil)
	syscall.ForkLock.RLock() // no process starts with the copy before it is close-on-exec
	err = raw.Control(func(fd uintptr) {
		if dup, dupErr = syscall.Dup(int(fd)); dupErr == nil {
			syscall.CloseOnExec(dup)
		}
	})
	syscall.ForkLock.RUnlock()
	if err != nil || dupErr != nil || dup < 0 {
		return nil, false
	}
	if err := syscall.SetNonblock(dup, true); err != nil {
		_ = syscall.Close(dup)
		return nil, false
	}
	return os.NewFile(uintptr(dup), f.Name()), true
}

// rawFile reads and writes f, a file in the runtime's poller, with raw
// system calls, waiting in the poller when f is not ready. The runtime's
// own calls tell the scheduler of each read and write, which wakes its
// monitor thread from its sleep at every message a relay passes: a third
// of the bridge's time on a two-core machine (BENCHMARKS.md). A raw call
// never blocks on a non-blocking file, so the scheduler need not know.
func rawFile(f *os.File) io.ReadWriter {
	raw, err := f.SyscallConn()
	if err != nil {
		return f
	}
	return &rawIO{raw: raw, name: f.Name()}
}

type rawIO struct {
	raw  syscall.RawConn
	name string
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.raw.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until f is readable
			}
			n, errno = int(m), e
			return true
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, &os.PathError{Op: "read", Path: r.name, Err: errno}
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawIO) Write(p []byte) (int, error) {
	n := 0
	var errno syscall.Errno
	err := r.raw.Write(func(fd uintptr) bool {
		for n < len(p) {
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n))
			switch e {
			case 0:
				if m == 0 {
					errno = syscall.EIO // a pipe or socket never takes nothing
					return true
				}
				n += int(m)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until f is writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, &os.PathError{Op: "write", Path: r.name, Err: errno}
	}
	return n, nil
}
