package duration_test

import (
	"errors"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/duration"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text  string
		bound time.Duration
		want  time.Duration
		ok    bool
	}{
		{"90s", duration.Longest, 90 * time.Second, true},
		{"1h30m", time.Second, 90 * time.Minute, true}, // the bound is for numbers of seconds only
		{"30", duration.Longest, 30 * time.Second, true},
		{"1.5", duration.Longest, 1500 * time.Millisecond, true},
		{"-2", duration.Longest, -2 * time.Second, true}, // the sign is the caller's to check
		{"0", time.Second, 0, true},
		{"1e9", 1e9 * time.Second, 1e9 * time.Second, true},
		{"1000000001", 1e9 * time.Second, 0, false},
		{"-1000000001", 1e9 * time.Second, 0, false},
		{"1e300", duration.Longest, 0, false},
		{"-1e300", duration.Longest, 0, false},
		{"NaN", duration.Longest, 0, false},
		{"Inf", duration.Longest, 0, false},
		{"9223372036.854775807", duration.Longest, 0, false}, // 2^63 ns: one past the longest Duration
		{" 30", duration.Longest, 0, false},                  // callers trim if they allow spaces
		{"30 s", duration.Longest, 0, false},
		{"", duration.Longest, 0, false},
		{"soon", duration.Longest, 0, false},
	} {
		got, err := duration.Parse(c.text, c.bound)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("Parse(%q, %s) = %s, %v; want %s, ok %v", c.text, c.bound, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, duration.ErrNotADuration) {
			t.Errorf("Parse(%q): error %v does not wrap ErrNotADuration", c.text, err)
		}
	}
}

// FuzzParse: Parse never panics, takes every Go duration as
// time.ParseDuration reads it, and a number of seconds only within its
// bound, as the Duration that number of seconds is.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"90s", "1h30m", "30", "1.5", "-2", "1e9", "1e300", "NaN", "-Inf", "0x10", "1_0", " 3", ""} {
		f.Add(seed, int64(1e9))
	}
	f.Fuzz(func(t *testing.T, text string, boundSeconds int64) {
		bound := time.Duration(boundSeconds) * time.Second
		if boundSeconds < 0 || boundSeconds > math.MaxInt64/int64(time.Second) {
			bound = duration.Longest
		}
		got, err := duration.Parse(text, bound)
		if d, perr := time.ParseDuration(text); perr == nil {
			if err != nil || got != d {
				t.Fatalf("Parse(%q) = %s, %v; time.ParseDuration reads %s", text, got, err, d)
			}
			return
		}
		seconds, ferr := strconv.ParseFloat(text, 64)
		if ferr != nil || math.IsNaN(seconds) || math.Abs(seconds) > bound.Seconds() {
			if err == nil {
				t.Fatalf("Parse(%q, %s) = %s, want a refusal", text, bound, got)
			}
			return
		}
		if err == nil && got != time.Duration(seconds*float64(time.Second)) {
			t.Fatalf("Parse(%q) = %s, want %g seconds", text, got, seconds)
		}
	})
}
