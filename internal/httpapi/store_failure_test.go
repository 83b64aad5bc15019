package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
)

// flakyJournal keeps records in memory and fails every write while broken,
// like a full or read-only disk.
type flakyJournal struct {
	mu      sync.Mutex
	records map[string][]byte
	broken  atomic.Bool
}

var errDiskFull = errors.New("write: no space left on device")

func (j *flakyJournal) Load(context.Context) ([]*pending.Question, error) { return nil, nil }

func (j *flakyJournal) Put(_ context.Context, qs ...*pending.Question) error {
	if j.broken.Load() {
		return errDiskFull
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, q := range qs {
		data, err := json.Marshal(q)
		if err != nil {
			return err
		}
		j.records[q.ID] = data
	}
	return nil
}

func (j *flakyJournal) Delete(_ context.Context, ids ...string) error {
	if j.broken.Load() {
		return errDiskFull
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, id := range ids {
		delete(j.records, id)
	}
	return nil
}

func (j *flakyJournal) Close() error { return nil }

func (j *flakyJournal) record(id string) string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return string(j.records[id])
}

// TestStoreFailuresAre503sThatChangeNothing: while the store cannot commit,
// creates, replies, rejects and withdrawals answer 503 with a JSON error,
// nothing is announced, and every question stays exactly as it was; once the
// store recovers, the same requests succeed.
func TestStoreFailuresAre503sThatChangeNothing(t *testing.T) {
	t.Parallel()
	journal := &flakyJournal{records: map[string][]byte{}}
	h := newHarnessOn(t, httpapi.Options{}, journal)
	events := h.openStream("/event")
	events.expect(t, "server.connected")
	id := h.create(seedForm()).ID
	events.expect(t, "question.asked")
	before := journal.record(id)

	journal.broken.Store(true)
	for _, c := range []struct{ method, path, body string }{
		{http.MethodPost, "/elicitations", ""},
		{http.MethodPost, "/question/" + id + "/reply", `{"answers":[["SY215C"],[]]}`},
		{http.MethodPost, "/question/" + id + "/reject", ""},
		{http.MethodDelete, "/elicitations/" + id, ""},
	} {
		var body any = c.body
		if c.path == "/elicitations" {
			body = seedForm()
		}
		res := h.do(c.method, c.path, body)
		var e struct {
			Name string
			Data struct{ Message, Ref string }
		}
		res.json(t, &e)
		if res.Status != http.StatusServiceUnavailable || e.Name != "ServiceUnavailable" || !strings.Contains(e.Data.Message, "nothing was changed") {
			t.Fatalf("%s %s with a failing store: %d %s", c.method, c.path, res.Status, res.Body)
		}
		if strings.Contains(string(res.Body), "no space left") {
			t.Fatalf("the store's error leaked to the client: %s", res.Body)
		}
	}
	var listed []struct{ ID string }
	h.do(http.MethodGet, "/question", nil).json(t, &listed)
	if len(listed) != 1 || listed[0].ID != id {
		t.Fatalf("after failed writes GET /question = %v, want only %s", listed, id)
	}
	if journal.record(id) != before {
		t.Fatal("a failed write changed the stored record")
	}

	journal.broken.Store(false)
	if res := h.do(http.MethodPost, "/question/"+id+"/reply", `{"answers":[["SY215C"],[]]}`); res.Status != http.StatusOK {
		t.Fatalf("reply after the store recovered: %d %s", res.Status, res.Body)
	}
	// The first event after the failures is this reply: nothing was announced for them.
	replied := events.expect(t, "question.replied")
	if !strings.Contains(string(replied.Properties), id) {
		t.Fatalf("unexpected %s", replied.Raw)
	}
	if !strings.Contains(journal.record(id), `"ending":"replied"`) {
		t.Fatalf("the reply was acknowledged but not committed: %s", journal.record(id))
	}
}
