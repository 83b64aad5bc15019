package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --log-format console into a file (a service's log, `2>questiond.log`)
// writes plain lines: before, every level came wrapped in ANSI colour
// codes, which a file, a pager or a log shipper shows as noise.
func TestConsoleLogsInAFileHaveNoColourCodes(t *testing.T) {
	t.Parallel()
	file, err := os.Create(filepath.Join(t.TempDir(), "questiond.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if err := runLoggingTo(t, file, nil, func() {}, "--log-format", "console", "--metrics-addr", "off"); err != nil {
		t.Fatal(err)
	}
	logs, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logs), "questiond listening") {
		t.Fatalf("no console line saying questiond listens:\n%q", logs)
	}
	if strings.Contains(string(logs), "\x1b[") {
		t.Errorf("console logs written to a file hold colour codes:\n%q", logs)
	}
}
