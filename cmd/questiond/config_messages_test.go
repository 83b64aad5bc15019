package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// A duration flag or variable takes a bare number as seconds, as a request's
// "timeout" does.
func TestDurationSettingsTakeSecondsLikeRequests(t *testing.T) {
	t.Parallel()
	cfg, err := parseConfig([]string{"--default-timeout", "10", "--max-wait", "1.5"},
		envOf(map[string]string{"QUESTIOND_HEARTBEAT": "3"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.defaultTimeout != 10*time.Second || cfg.maxWait != 1500*time.Millisecond || cfg.heartbeat != 3*time.Second {
		t.Fatalf("default-timeout %s, max-wait %s, heartbeat %s; want 10s, 1.5s, 3s", cfg.defaultTimeout, cfg.maxWait, cfg.heartbeat)
	}
	// On/off flags still stand alone, and take a value after "=".
	cfg, err = parseConfig([]string{"--console-follow", "--notify-include-text=false", "--max-body", "10"}, envOf(nil), io.Discard)
	if err != nil || !cfg.consoleFollow || cfg.notifyIncludeText || cfg.maxBody != 10 {
		t.Fatalf("--console-follow --notify-include-text=false --max-body 10: %+v, %v", cfg, err)
	}
}

// A bad value is one line that names the flag or variable and says what is
// wanted: no usage dump, no bare "parse error".
func TestBadValuesSayWhatIsWantedInOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--default-timeout", "10x"}, nil, `--default-timeout: "10x" is not a duration; want a duration like 90s or 1h30m`},
		{nil, map[string]string{"QUESTIOND_HEARTBEAT": "bogus"}, `QUESTIOND_HEARTBEAT: "bogus" is not a duration; want a duration like 90s`},
		{[]string{"--max-sessions", "lots"}, nil, `--max-sessions: "lots" is not a whole number`},
		{nil, map[string]string{"QUESTIOND_MAX_BODY": "1k"}, `QUESTIOND_MAX_BODY: "1k" is not a whole number`},
		{[]string{"--insecure=maybe"}, nil, `--insecure: "maybe" is not true or false`},
		{nil, map[string]string{"QUESTIOND_INSECURE": "maybe"}, `QUESTIOND_INSECURE: "maybe" is not true or false`},
		{[]string{"--no-such-flag"}, nil, "unknown flag --no-such-flag (see questiond --help)"},
		{[]string{"--addr"}, nil, "flag needs an argument: --addr"},
		{[]string{"--addr", "4602"}, nil, `--addr: want host:port, like 127.0.0.1:4097`},
		{[]string{"--addr", "127.0.0.1:http-ish"}, nil, `--addr: want host:port`},
		{[]string{"--addr", "127.0.0.1:70000"}, nil, `--addr: want host:port`},
	} {
		var out bytes.Buffer
		_, err := parseConfig(tc.args, envOf(tc.env), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: got %v, want an error containing %q", tc.args, tc.env, err, tc.want)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "parse error") || strings.Contains(msg, "invalid value") {
			t.Errorf("%v %v: the error is not one clear line: %q", tc.args, tc.env, msg)
		}
		if out.Len() != 0 {
			t.Errorf("%v %v: printed %d bytes of usage besides the error", tc.args, tc.env, out.Len())
		}
	}
	// --addr 4602 was refused for lacking credentials, which misled.
	err := run(t.Context(), []string{"--addr", "4602", "--store", "memory"}, envOf(nil), io.Discard, io.Discard, nil)
	if err == nil || strings.Contains(err.Error(), "credentials") || !strings.Contains(err.Error(), "host:port") {
		t.Fatalf("--addr 4602: %v", err)
	}
	if _, err := parseConfig([]string{"--addr", ":4602"}, envOf(nil), io.Discard); err != nil {
		t.Fatalf("--addr :4602 (every interface) is a valid address: %v", err)
	}
}

// --help names each flag's kind of value, shows one default at most, and
// offers no environment twin for --version, which reads none.
func TestHelpReadsCleanly(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if _, err := parseConfig([]string{"--help"}, envOf(nil), &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	help := out.String()
	if !strings.Contains(help, "  --version\n    \tprint the version and exit\n") {
		t.Error("--help gives --version a default or a twin, though it is an action")
	}
	if strings.Contains(help, "QUESTIOND_VERSION") {
		t.Error("--help offers QUESTIOND_VERSION, which does nothing")
	}
	kinds := map[string]bool{"host:port": true, "duration": true, "n": true, "file": true, "dir": true, "list": true, "url": true}
	lines := strings.Split(help, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "  --") {
			continue
		}
		fields := strings.Fields(line)
		desc := lines[i+1]
		if strings.Count(desc, "default") > 1 {
			t.Errorf("%s: more than one default: %s", fields[0], desc)
		}
		if len(fields) == 1 {
			continue // an on/off flag
		}
		if kind := fields[1]; !kinds[kind] && !strings.Contains(kind, "|") {
			t.Errorf("%s takes %q, not one of the value kinds %v or a choice a|b", fields[0], kind, kinds)
		}
	}
	for _, want := range []string{"--store bolt|memory|postgres", "--max-sessions n", "--default-timeout duration", "--data-dir dir"} {
		if !strings.Contains(help, want+"\n") {
			t.Errorf("--help lacks %q", want)
		}
	}
	cfg, err := parseConfig(nil, envOf(map[string]string{"QUESTIOND_VERSION": "1"}), io.Discard)
	if err != nil || cfg.showVersion {
		t.Fatalf("QUESTIOND_VERSION must stay without effect: %v, %v", cfg, err)
	}
}
