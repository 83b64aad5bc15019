package daemon_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/pgtest"
)

// With PostgreSQL gone, asking in a session is refused with 503 naming
// PostgreSQL (not "session records", which a newcomer cannot place), and
// the log names the session once (issue 24 item 14).
func TestAskingWhilePostgreSQLIsDownNamesIt(t *testing.T) {
	dbURL := pgtest.Database(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	core, logs := observer.New(zap.InfoLevel)
	base, _ := serve(t, daemon.Config{DatabaseURL: dbURL, Logger: zap.New(core)})

	server := pgtest.Shared(t)
	down := func(allow bool) {
		t.Helper()
		stmt := "ALTER DATABASE " + name + " ALLOW_CONNECTIONS " + map[bool]string{true: "true", false: "false"}[allow]
		if err := server.Exec(context.Background(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	down(false)
	t.Cleanup(func() { down(true) }) // before the daemon stops (cleanups run last first)
	if err := server.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+name+"'"); err != nil {
		t.Fatal(err)
	}

	res, err := http.Post(base+"/elicitations", "application/json", strings.NewReader(
		`{"message":"Ship?","sessionID":"ses_pgdown","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "PostgreSQL is unavailable") || !strings.Contains(string(body), "nothing was changed") {
		t.Fatalf("asking with PostgreSQL down: %d %s; want 503 naming PostgreSQL", res.StatusCode, body)
	}
	for _, entry := range logs.All() {
		for _, f := range entry.Context {
			if f.Key == "error" {
				if text := f.Interface.(error).Error(); strings.Count(text, "ses_pgdown") > 1 {
					t.Errorf("the log names the session more than once: %s", text)
				}
			}
		}
	}
}
