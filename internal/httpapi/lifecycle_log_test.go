package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// At the default level a question's life is in the log — asked, and how it
// ended after how long — by ids and names only: never its text or answers,
// and never an empty field.
func TestQuestionLifeIsLoggedAtInfo(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.InfoLevel)
	h := newHarnessWith(t, tuning{}, zap.New(core))
	form := seedForm()
	form["message"] = "the secret plan"
	form["sessionID"] = "ses_logged"
	id := h.create(form).ID
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", map[string]any{"answers": [][]string{{"SY215C"}, {"Low power"}}}); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	want := map[string]map[string]string{
		"question asked": {"id": id, "session": "ses_logged"},
		"question ended": {"id": id, "session": "ses_logged", "ending": "replied", "action": "accept"},
	}
	for msg, fields := range want {
		entries := logs.FilterMessage(msg).All()
		if len(entries) != 1 || entries[0].Level != zapcore.InfoLevel {
			t.Fatalf("%q: %d entries %+v, want one at info", msg, len(entries), entries)
		}
		got := entries[0].ContextMap()
		for k, v := range fields {
			if fmt.Sprint(got[k]) != v {
				t.Errorf("%q: %s = %v, want %s (all: %v)", msg, k, got[k], v, got)
			}
		}
		for k, v := range got {
			s := fmt.Sprint(v)
			if s == "" || strings.Contains(s, "secret") || strings.Contains(s, "SY215C") || strings.Contains(s, "Low power") {
				t.Errorf("%q: field %s = %q is empty or carries the question's text or answers", msg, k, s)
			}
		}
	}
	if _, ok := logs.FilterMessage("question ended").All()[0].ContextMap()["waited"]; !ok {
		t.Error("question ended: no waited field")
	}
}
