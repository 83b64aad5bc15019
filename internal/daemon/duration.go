package daemon

import (
	"time"

	"github.com/questiond/questiond/internal/duration"
)

// ParseDuration reads a Go duration ("90s") or a number of seconds ("30")
// whose size is at most bound: package duration's Parse, the one reader of
// lengths of time, re-exported for cmd/questiond's flags, which reach the
// daemon's parts through this package alone. Its error wraps
// ErrNotADuration.
func ParseDuration(text string, bound time.Duration) (time.Duration, error) {
	return duration.Parse(text, bound)
}

// ErrNotADuration is what ParseDuration refuses text with.
var ErrNotADuration = duration.ErrNotADuration
