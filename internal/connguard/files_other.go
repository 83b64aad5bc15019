//go:build !unix

package connguard

// openFileLimit is unknown here: MaxConns stays as configured.
func openFileLimit() (int, bool) { return 0, false }
