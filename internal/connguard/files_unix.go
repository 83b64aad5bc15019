//go:build unix

package connguard

import "syscall"

// openFileLimit is the process's open-file limit (Go raises the soft limit
// to the hard one at start).
func openFileLimit() (int, bool) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<30 {
		return 0, false
	}
	return int(lim.Cur), true
}
