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

func TestReconnectGraceFlag(t *testing.T) {
	t.Parallel()
	none := func(string) string { return "" }
	var help bytes.Buffer
	if _, err := parseConfig([]string{"--help"}, none, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if !strings.Contains(help.String(), `--reconnect-grace duration`) || !strings.Contains(help.String(), `(default "1m0s", env QUESTIOND_RECONNECT_GRACE)`) {
		t.Fatalf("--help does not document --reconnect-grace with its default and twin:\n%s", help.String())
	}
	cfg, err := parseConfig(nil, none, io.Discard)
	if err != nil || cfg.reconnectGrace != time.Minute {
		t.Fatalf("default reconnect grace %v, %v; want 1m", cfg, err)
	}
	env := func(k string) string { return map[string]string{"QUESTIOND_RECONNECT_GRACE": "90s"}[k] }
	if cfg, err := parseConfig(nil, env, io.Discard); err != nil || cfg.reconnectGrace != 90*time.Second {
		t.Fatalf("QUESTIOND_RECONNECT_GRACE=90s gave %v, %v", cfg, err)
	}
	if _, err := parseConfig([]string{"--reconnect-grace", "0s"}, none, io.Discard); err == nil || !strings.Contains(err.Error(), "--reconnect-grace") {
		t.Fatalf("--reconnect-grace 0s: %v, want an error naming the flag", err)
	}
}
