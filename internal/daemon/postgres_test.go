package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/daemon"
	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/pgtest"
)

// On PostgreSQL, what a webhook refused until one replica stopped is
// delivered by the next replica that starts, under the same event id, and
// the question that replica asked is pending on the next one.
func TestReplicaDeliversAnotherReplicasNotifications(t *testing.T) {
	t.Parallel()
	var up atomic.Bool
	refused := make(chan string, 100)
	bodies := make(chan string, 100)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		if !up.Load() {
			refused <- r.Header.Get(notify.HeaderEventID)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		bodies <- r.Header.Get(notify.HeaderEventID) + " " + string(data)
	}))
	defer hook.Close()
	url := pgtest.Database(t)
	replica := func() daemon.Config {
		return daemon.Config{DatabaseURL: url, Notify: notify.Options{URLs: []string{hook.URL + "/hook"}, MinBackoff: time.Hour, Grace: 50 * time.Millisecond}}
	}
	base, stop := serve(t, replica())
	var created struct{ ID string }
	call(t, 5*time.Second, "POST", base+"/elicitations", oneQuestion, &created)
	var first string
	select {
	case first = <-refused:
	case <-time.After(10 * time.Second):
		t.Fatal("the webhook got nothing")
	}
	stop()

	up.Store(true)
	next, _ := serve(t, replica())
	select {
	case b := <-bodies:
		id, body, _ := strings.Cut(b, " ")
		if id != first || !strings.Contains(body, fmt.Sprintf(`"id":"%s"`, created.ID)) {
			t.Fatalf("the next replica delivered %s %s; want event %s", id, body, first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing delivered by the next replica")
	}
	var listed []struct{ ID string }
	call(t, 5*time.Second, "GET", next+"/question", "", &listed)
	if len(listed) != 1 || listed[0].ID != created.ID {
		t.Fatalf("the next replica lists %v; want %s pending", listed, created.ID)
	}
}
