package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// logLines are the JSON log lines of logs, in order.
func logLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		lines = append(lines, entry)
	}
	return lines
}

// The start-up log names the operators' page, right after the listening
// line, which stays as tools and tests read it: a newcomer sees where to
// answer, and the URL logged opens the page. With --public-url the page is
// named there.
func TestStartupLogNamesThePage(t *testing.T) {
	t.Parallel()
	var page string
	logs, err := runLogs(t, nil, func(logs string) {
		lines := logLines(t, logs)
		for i, entry := range lines {
			if entry["msg"] != "questiond listening" {
				continue
			}
			if addr, _ := entry["addr"].(string); addr == "" || entry["scheme"] != "http" {
				t.Errorf("the listening line changed: %v", entry)
			}
			if i+1 == len(lines) {
				t.Fatalf("nothing follows the listening line:\n%s", logs)
			}
			next := lines[i+1]
			page, _ = next["url"].(string)
			if want := "http://" + entry["addr"].(string) + "/ui"; page != want || next["msg"] != "open "+want+" to answer questions" {
				t.Fatalf("after the listening line: %v, want the page %s named", next, want)
			}
		}
		if page == "" {
			t.Fatalf("no listening line:\n%s", logs)
		}
		res, err := http.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "<html") {
			t.Errorf("GET %s: %d %s, want the page", page, res.StatusCode, res.Header.Get("Content-Type"))
		}
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}

	logs, err = runLogs(t, nil, nil, "--public-url", "https://questions.example.com/")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs, `"msg":"open https://questions.example.com/ui to answer questions"`) {
		t.Errorf("with --public-url the log does not name the page there:\n%s", logs)
	}
}
