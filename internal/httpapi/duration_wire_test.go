package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/httpapi"
)

// A length of time is read the one way (package duration) wherever it is
// sent, and a refusal says what is wrong with it: a number of seconds past
// the maximum timeout is "longer than the maximum", however far past, as a
// duration string is; and a ?wait= no Duration can hold is not a duration,
// not "negative".
func TestDurationsAreRefusedForWhatIsWrongWithThem(t *testing.T) {
	h := newHarness(t, httpapi.Options{MaxTimeout: time.Hour})
	schema := `,"requestedSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`
	for _, c := range []struct{ timeout, want string }{
		{`3601`, `timeout 1h0m1s is longer than the maximum 1h0m0s`},
		{`3602`, `timeout 1h0m2s is longer than the maximum 1h0m0s`},
		{`"2h"`, `timeout 2h0m0s is longer than the maximum 1h0m0s`},
		{`7200`, `timeout 2h0m0s is longer than the maximum 1h0m0s`},
		{`-5`, `timeout must be positive, got -5`},
		{`1e300`, `Expected a duration string or a number of seconds, got 1e300`},
	} {
		res := h.do(http.MethodPost, "/elicitations", `{"message":"m","timeout":`+c.timeout+schema)
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), c.want) {
			t.Errorf("timeout %s: %d %s, want 400 saying %q", c.timeout, res.Status, res.Body, c.want)
		}
	}
	id := h.create(seedForm()).ID
	for _, c := range []struct{ wait, want string }{
		{"-1s", `wait must not be negative, got \"-1s\"`},
		{"-2", `wait must not be negative, got \"-2\"`},
		{"1e300", `Expected a duration such as \"30s\", got \"1e300\"`},
		{"Inf", `Expected a duration such as \"30s\", got \"Inf\"`},
		{"NaN", `Expected a duration such as \"30s\", got \"NaN\"`},
	} {
		res := h.do(http.MethodGet, "/elicitations/"+id+"?wait="+c.wait, nil)
		if res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), c.want) {
			t.Errorf("wait=%s: %d %s, want 400 saying %s", c.wait, res.Status, res.Body, c.want)
		}
	}
}
