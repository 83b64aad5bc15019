package daemon_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/pgtest"
)

// A replica that shuts down while its change-log tail has not reached a
// timeout it just made still tells its closing streams how the question
// ended (issue 22, point (a)). The tail is held back by an open
// transaction, as a busy database does, until the shutdown is under way.
func TestReplicaShutdownAnnouncesTimeoutsUnderWay(t *testing.T) {
	t.Parallel()
	url := pgtest.Database(t)
	base, stop := serve(t, daemon.Config{DatabaseURL: url})
	res, err := http.Get(base + "/event")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	events := readEvents(res.Body)
	nextEvent(t, events, "server.connected")
	var created struct{ ID string }
	call(t, 5*time.Second, "POST", base+"/elicitations", strings.Replace(oneQuestion, "{", `{"timeout":"1s",`, 1), &created)
	nextEvent(t, events, "question.asked")

	ctx := context.Background()
	hold, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close(ctx)
	held, err := hold.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(ctx, "SELECT pg_current_xact_id()"); err != nil { // no tail reads past it
		t.Fatal(err)
	}
	look, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer look.Close(ctx)
	eventually(t, "the question timed out", func() bool {
		var n int
		return look.QueryRow(ctx, "SELECT count(*) FROM changes WHERE kind = 'ended' AND question_id = $1", created.ID).Scan(&n) == nil && n == 1
	})

	stopped := make(chan struct{})
	go func() { defer close(stopped); stop() }()
	time.Sleep(300 * time.Millisecond) // the shutdown is past its releases
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-stopped
	for e := range events {
		if e.Type == "question.rejected" && e.Properties.RequestID == created.ID {
			return
		}
	}
	t.Fatalf("the stream closed without the ending of %s, which timed out before the shutdown", created.ID)
}
