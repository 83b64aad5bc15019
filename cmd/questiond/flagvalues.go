package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/questiond/questiond/internal/daemon"
)

// The flag package's own values answer a bad setting with "parse error";
// these say what is wanted instead. parseConfig puts the flag's or the
// environment variable's name in front.

// durationValue is a duration flag that, like a request's "timeout", also
// takes a bare number of seconds.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return v.d.String()
}

func (v durationValue) Set(s string) error {
	d, err := parseFlagDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}

// flagDurationBound is the largest number of seconds a duration flag takes
// (about 31 years): anything more is a typo.
const flagDurationBound = 1e9 * time.Second

// parseFlagDuration reads a Go duration ("90s", "1h30m") or a number of
// seconds ("30", "1.5"), with spaces around it, as requests' "timeout" and
// ?wait= do (daemon.ParseDuration).
func parseFlagDuration(s string) (time.Duration, error) {
	d, err := daemon.ParseDuration(strings.TrimSpace(s), flagDurationBound)
	if err != nil {
		return 0, fmt.Errorf("%q is %w", s, daemon.ErrNotADuration)
	}
	return d, nil
}

// intValue is a whole-number flag.
type intValue[T int | int64] struct{ n *T }

func (v intValue[T]) String() string {
	if v.n == nil {
		return ""
	}
	return strconv.FormatInt(int64(*v.n), 10)
}

func (v intValue[T]) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || int64(T(n)) != n {
		return fmt.Errorf("%q is not a whole number; want a number like 1000", s)
	}
	*v.n = T(n)
	return nil
}

// boolValue is an on/off flag: given alone it means true.
type boolValue struct{ b *bool }

func (v boolValue) String() string {
	if v.b == nil {
		return ""
	}
	return strconv.FormatBool(*v.b)
}

func (v boolValue) Set(s string) error {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("%q is not true or false; want true, false, 1 or 0", s)
	}
	*v.b = b
	return nil
}

func (v boolValue) IsBoolFlag() bool { return true }
