package testkit

import (
	"testing"
	"time"
)

// Receive returns the next value from c; it fails the test, naming the
// value as what, if none comes within timeout (a hang guard, not a speed
// limit) or c is closed first.
func Receive[T any](tb testing.TB, c <-chan T, timeout time.Duration, what string) T {
	tb.Helper()
	return Next(tb, c, timeout, what, func(T) bool { return true })
}

// Eventually polls ok until it holds, and fails the test, saying what did
// not come about, if that takes longer than timeout (a hang guard, not a
// speed limit).
func Eventually(tb testing.TB, timeout time.Duration, what string, ok func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(timeout); !ok(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("not within %v: %s", timeout, what)
		}
	}
}
