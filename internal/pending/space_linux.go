package pending

import "syscall"

// freeSpace returns the bytes an unprivileged writer may still use on the
// file system holding dir, and whether it could be measured.
func freeSpace(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * st.Bsize, true
}
