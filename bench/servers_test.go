package bench

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/sse"
)

// server is one system under test, listening on a loopback port.
type server struct {
	name string
	url  string
	stop func() // ends its streams and long-polls and closes every connection
}

// servers are the systems every benchmark compares, questiond first. A
// server's queueLength is how many frames it buffers per event subscriber
// before cutting that subscriber off (questiond's --event-queue); both get
// the same, so both shed slow readers at the same point.
var servers = []struct {
	name  string
	start func(tb testing.TB, queueLength int) *server
}{
	{"questiond", startQuestiond},
	{"questiond-bolt", startQuestiondBolt},
	{"baseline", startBaseline},
}

// startQuestiond assembles questiond as cmd/questiond does, with its default
// settings but queueLength, and a no-op logger (it logs nothing per request
// above debug level).
func startQuestiond(tb testing.TB, queueLength int) *server {
	tb.Helper()
	return startQuestiondOn(tb, queueLength, "questiond", nil)
}

// startQuestiondBolt is questiond with its default, durable store: a bbolt
// file in a temporary directory, synced to disk on every commit.
func startQuestiondBolt(tb testing.TB, queueLength int) *server {
	tb.Helper()
	journal, err := pending.OpenBolt(filepath.Join(tb.TempDir(), "questiond.db"), pending.BoltOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return startQuestiondOn(tb, queueLength, "questiond-bolt", journal)
}

func startQuestiondOn(tb testing.TB, queueLength int, name string, journal *pending.Bolt) *server {
	tb.Helper()
	log := zap.NewNop()
	bus, err := sse.New(sse.Options{Logger: log, QueueLength: queueLength})
	if err != nil {
		tb.Fatal(err)
	}
	events := httpapi.NewEvents(bus, log)
	storeOpts := pending.MemoryOptions{OnEnd: events.Ended, Logger: log}
	var store *pending.Memory
	if journal == nil {
		store = pending.NewMemory(storeOpts)
	} else {
		storeOpts.Journal = journal
		if store, err = pending.Open(context.Background(), storeOpts); err != nil {
			tb.Fatal(err)
		}
	}
	api, err := httpapi.New(store, events, httpapi.Options{Logger: log})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(api)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		api.Drain()
		if _, err := store.SettleAll(ctx, pending.Outcome{Ending: pending.EndShutdown, Result: pending.Result{Action: pending.ActionCancel}}); err != nil {
			tb.Errorf("questiond: settling pending questions: %v", err)
		}
		if err := bus.Close(ctx); err != nil {
			tb.Errorf("questiond: closing the event bus: %v", err)
		}
		ts.Close()
		if err := store.Close(ctx); err != nil {
			tb.Errorf("questiond: closing the store: %v", err)
		}
		if journal != nil {
			if err := journal.Close(); err != nil {
				tb.Errorf("questiond: closing the journal: %v", err)
			}
		}
	}
	return &server{name: name, url: ts.URL, stop: stop}
}

func startBaseline(tb testing.TB, queueLength int) *server {
	tb.Helper()
	b := newBaseline(queueLength)
	ts := httptest.NewServer(b.handler())
	stop := func() {
		b.shutdown()
		ts.Close()
	}
	return &server{name: "baseline", url: ts.URL, stop: stop}
}
