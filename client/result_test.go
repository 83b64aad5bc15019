package client_test

import (
	"strings"
	"testing"

	"github.com/questiond/questiond/client"
)

func TestResultAccessorsExplainWhatTheyFound(t *testing.T) {
	res := &client.Result{Action: "accept", Content: map[string]any{
		"name": "api", "n": 3.0, "half": 2.5, "huge": 1e19, "ok": true, "tags": []any{"a", "b"}, "mixed": []any{"a", 1.0},
	}}
	for _, tc := range []struct {
		name string
		read func() error
		want string // "" for success
	}{
		{"string", func() error { _, err := res.String("name"); return err }, ""},
		{"string of a number", func() error { _, err := res.String("n"); return err }, `"n": want a string, found the number 3`},
		{"int", func() error { _, err := res.Int("n"); return err }, ""},
		{"int of a fraction", func() error { _, err := res.Int("half"); return err }, `"half": want an integer, found 2.5`},
		{"int out of range", func() error { _, err := res.Int("huge"); return err }, `"huge": 1e+19 is out of the int64 range`},
		{"int of a string", func() error { _, err := res.Int("name"); return err }, `"name": want an integer, found the string "api"`},
		{"float", func() error { _, err := res.Float("half"); return err }, ""},
		{"bool", func() error { _, err := res.Bool("ok"); return err }, ""},
		{"bool of a list", func() error { _, err := res.Bool("tags"); return err }, `"tags": want a boolean, found a list`},
		{"strings", func() error { _, err := res.Strings("tags"); return err }, ""},
		{"strings with a number", func() error { _, err := res.Strings("mixed"); return err }, `"mixed": want a list of strings, found the number 1 at index 1`},
		{"missing", func() error { _, err := res.String("nope"); return err }, `"nope": not in the content`},
		{"declined", func() error { _, err := (&client.Result{Action: "decline"}).Bool("ok"); return err }, `not accepted (action "decline")`},
		{"nil", func() error { _, err := (*client.Result)(nil).Strings("tags"); return err }, "no result"},
	} {
		err := tc.read()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if n, _ := res.Int("n"); n != 3 {
		t.Errorf("Int = %d", n)
	}
	if !res.Accepted() || (&client.Result{Action: "cancel"}).Accepted() || (*client.Result)(nil).Accepted() {
		t.Error("Accepted is wrong")
	}
}
