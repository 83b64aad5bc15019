package main

import (
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/testkit"
)

func TestMaxRetainedSetting(t *testing.T) {
	t.Parallel()
	var help strings.Builder
	if _, err := parseConfig([]string{"--help"}, func(string) string { return "" }, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(help.String(), "--max-retained") || !strings.Contains(help.String(), "QUESTIOND_MAX_RETAINED") {
		t.Error("--help does not document --max-retained and QUESTIOND_MAX_RETAINED")
	}
	cfg, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.maxRetained != pending.DefaultMaxRetained {
		t.Errorf("default --max-retained = %v, %v; want pending.DefaultMaxRetained", cfg, err)
	}
	cfg, err = parseConfig(nil, func(k string) string { return map[string]string{"QUESTIOND_MAX_RETAINED": "7"}[k] }, io.Discard)
	if err != nil || cfg.maxRetained != 7 {
		t.Errorf("QUESTIOND_MAX_RETAINED=7 gave %v, %v", cfg, err)
	}
	for _, bad := range []string{"0", "-1"} {
		if _, err := parseConfig([]string{"--max-retained", bad}, func(string) string { return "" }, io.Discard); err == nil ||
			!strings.Contains(err.Error(), "--max-retained must be positive") {
			t.Errorf("--max-retained %s: %v, want it refused by name", bad, err)
		}
	}
}

// The daemon passes --max-retained to the durable store: the oldest result
// is evicted as the third one ends, and stays evicted after a restart.
func TestMaxRetainedDaemon(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	base, stop := startDaemon(t, nil, "--data-dir", dataDir, "--max-retained", "2")
	var ids []string
	for range 3 {
		status, body := sendJSON(t, http.MethodPost, base+"/elicitations", twoQuestions)
		var e struct{ ID string }
		if status != http.StatusCreated || json.Unmarshal([]byte(body), &e) != nil {
			t.Fatalf("create: %d %s", status, body)
		}
		if status, body := sendJSON(t, http.MethodDelete, base+"/elicitations/"+e.ID, ""); status != http.StatusOK {
			t.Fatalf("withdraw: %d %s", status, body)
		}
		ids = append(ids, e.ID)
	}
	check := func(base, when string) {
		t.Helper()
		status, evicted := sendJSON(t, http.MethodGet, base+"/elicitations/"+ids[0], "")
		_, unknown := sendJSON(t, http.MethodGet, base+"/elicitations/que_unknown", "")
		if status != http.StatusNotFound || strings.ReplaceAll(evicted, ids[0], "que_unknown") != unknown {
			t.Errorf("%s: GET of the evicted result = %d %s; want the 404 of an unknown id, %s", when, status, evicted, unknown)
		}
		for _, id := range ids[1:] {
			if status, body := sendJSON(t, http.MethodGet, base+"/elicitations/"+id, ""); status != http.StatusOK {
				t.Errorf("%s: GET of a kept result = %d %s", when, status, body)
			}
		}
	}
	check(base, "running")
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	again, _ := startDaemon(t, nil, "--data-dir", dataDir, "--max-retained", "2")
	check(again, "after a restart")
}

func sendJSON(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	return testkit.SendJSON(t, method, url, body)
}
