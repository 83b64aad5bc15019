package bench

import (
	"net/http/httptest"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testserver"
)

// server is one system under test, listening on a loopback port.
type server struct {
	name     string
	url      string
	replicas []string // with several replicas, every one's URL (url is the first)
	stop     func()   // ends its streams and long-polls and closes every connection
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
	return startQuestiondOn(tb, queueLength, "questiond", "")
}

// startQuestiondBolt is questiond with its default, durable store: a bbolt
// file in a temporary directory, synced to disk on every commit.
func startQuestiondBolt(tb testing.TB, queueLength int) *server {
	tb.Helper()
	return startQuestiondOn(tb, queueLength, "questiond-bolt", filepath.Join(tb.TempDir(), "questiond.db"))
}

// startQuestiondOn starts questiond with the memory store, or the durable
// one in the bbolt file at boltPath.
func startQuestiondOn(tb testing.TB, queueLength int, name, boltPath string) *server {
	tb.Helper()
	q, err := testserver.Start(testserver.Config{
		Events:   sse.Options{QueueLength: queueLength},
		BoltPath: boltPath,
		Logger:   zap.NewNop(),
	})
	if err != nil {
		tb.Fatal(err)
	}
	stop := func() {
		if err := q.Stop(); err != nil {
			tb.Errorf("%s: %v", name, err)
		}
	}
	return &server{name: name, url: q.URL, stop: stop}
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
