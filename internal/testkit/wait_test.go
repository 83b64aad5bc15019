package testkit_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testkit"
)

// failures records a test's failure instead of failing it; Fatalf ends
// the goroutine, as testing's does.
type failures struct {
	testing.TB
	msg string
}

func (f *failures) Helper() {}
func (f *failures) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run runs body with a failures in a goroutine of its own and returns what
// it failed with ("" for no failure).
func run(t *testing.T, body func(tb testing.TB)) string {
	f := &failures{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(f)
	}()
	<-done
	return f.msg
}

func TestReceive(t *testing.T) {
	c := make(chan int, 1)
	c <- 7
	if got := testkit.Receive(t, c, time.Second, "seven"); got != 7 {
		t.Fatalf("Receive = %d, want 7", got)
	}
	msg := run(t, func(tb testing.TB) { testkit.Receive(tb, c, 10*time.Millisecond, "an eight") })
	if !strings.Contains(msg, "no an eight within 10ms") {
		t.Fatalf("Receive of nothing failed with %q", msg)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	testkit.Eventually(t, time.Minute, "the third try", func() bool { n++; return n == 3 })
	if n != 3 {
		t.Fatalf("ok called %d times, want 3", n)
	}
	msg := run(t, func(tb testing.TB) {
		testkit.Eventually(tb, 20*time.Millisecond, "the impossible", func() bool { return false })
	})
	if msg != "not within 20ms: the impossible" {
		t.Fatalf("Eventually of the impossible failed with %q", msg)
	}
}
