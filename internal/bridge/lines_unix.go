//go:build unix

package bridge

import (
	"os"
	"syscall"
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
