// Package duration reads the one way questiond takes a length of time from
// people and programs alike: a Go duration ("90s", "1h30m") or a number of
// seconds ("30", "1.5"). Flags (cmd/questiond, through package daemon), a
// request's "timeout" and a long-poll's ?wait= all read it with Parse; each
// caller says how large a number of seconds it takes and words its own
// refusal.
package duration

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Longest is the longest time a time.Duration holds (about 292 years): as a
// bound it refuses only numbers of seconds no Duration can hold.
const Longest = time.Duration(math.MaxInt64)

// ErrNotADuration is what Parse refuses text with: neither a Go duration nor
// a number of seconds within the bound.
var ErrNotADuration = errors.New("not a duration; want a duration like 90s or 1h30m, or a number of seconds")

// Parse reads text, as it is (callers trim it if they allow spaces), as a
// Go duration or else a number of seconds. A number of seconds is taken
// only when its size is at most bound (NaN never is), so that it converts
// to a Duration without overflowing; Go durations carry their own bound
// (time.ParseDuration refuses what overflows). Neither sign nor range is
// otherwise checked: that, and the words of a refusal, are the caller's.
// The error wraps ErrNotADuration.
func Parse(text string, bound time.Duration) (time.Duration, error) {
	if d, err := time.ParseDuration(text); err == nil {
		return d, nil
	}
	seconds, err := strconv.ParseFloat(text, 64)
	nanos := seconds * float64(time.Second)
	// float64(Longest) rounds up to 2^63, which no Duration holds: that
	// bound itself is excluded.
	if err != nil || !(math.Abs(seconds) <= bound.Seconds()) || math.Abs(nanos) >= float64(Longest) {
		return 0, fmt.Errorf("%q is %w", text, ErrNotADuration)
	}
	return time.Duration(nanos), nil
}
