package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// newHangingReceiver answers nothing until release is closed; it sends each
// request's question id to arrived as it comes in.
func newHangingReceiver(t *testing.T, release <-chan struct{}, arrived chan<- string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Question struct {
				ID string `json:"id"`
			} `json:"question"`
		}
		data, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(data, &body)
		arrived <- body.Question.ID
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// switchingReceiver forwards to one receiver, then another: one URL whose
// server is down, then up.
type switchingReceiver struct {
	mu     sync.Mutex
	target *receiver
}

func (s *switchingReceiver) set(r *receiver) {
	s.mu.Lock()
	s.target = r
	s.mu.Unlock()
}

func (s *switchingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	target := s.target
	s.mu.Unlock()
	target.Config.Handler.ServeHTTP(w, r)
}

func newReceiverHandler(t *testing.T, h http.Handler) *httptest.Server {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func records(t *testing.T, o interface {
	Load(context.Context) (map[string][]byte, error)
}) int {
	t.Helper()
	m, err := o.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}

// memoryOutbox is an outbox in a map.
type memoryOutbox struct {
	mu      sync.Mutex
	records map[string][]byte
}

func (m *memoryOutbox) Load(context.Context) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.records), nil
}

func (m *memoryOutbox) Put(_ context.Context, key string, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.records[key] = value
	return nil
}

func (m *memoryOutbox) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.records, key)
	return nil
}
