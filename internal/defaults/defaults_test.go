package defaults_test

import (
	"testing"
	"time"

	"github.com/questiond/questiond/internal/defaults"
)

func TestFillReplacesOnlyUnsetValues(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, time.Minute},
		{-time.Second, time.Minute},
		{time.Second, time.Second},
	} {
		v := tc.in
		if defaults.Fill(&v, time.Minute); v != tc.want {
			t.Errorf("Fill(%v, 1m) = %v, want %v", tc.in, v, tc.want)
		}
	}
	n := 7
	if defaults.Fill(&n, 3); n != 7 {
		t.Errorf("Fill(7, 3) = %d, want 7", n)
	}
}
