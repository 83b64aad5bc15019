package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/sse"
	"github.com/questiond/questiond/internal/testkit"
	"github.com/questiond/questiond/internal/testserver"
)

// harness is a real questiond (memory store unless a journal is given, real
// event broker) on a random port.
type harness struct {
	t     *testing.T
	URL   string
	store *pending.Store
	bus   *sse.Broker
	api   *httpapi.Server
}

func newHarness(t *testing.T, opts httpapi.Options) *harness {
	t.Helper()
	return newHarnessWith(t, tuning{api: opts}, zaptest.NewLogger(t))
}

// newHarnessOn is newHarness with the store writing through journal (nil:
// memory only).
func newHarnessOn(t *testing.T, opts httpapi.Options, journal pending.Journal) *harness {
	t.Helper()
	return newHarnessWith(t, tuning{api: opts, journal: journal}, zaptest.NewLogger(t))
}

// tuning is what a test changes in the harness: the broker's, the store's and
// the server's settings, and a journal for a durable store.
type tuning struct {
	events  sse.Options     // Logger is the harness's; Heartbeat defaults to an hour
	store   pending.Options // OnEnd, Logger and Journal are the harness's
	api     httpapi.Options // Logger is the harness's
	journal pending.Journal // nil: memory only
	// database, if set, keeps the questions in that PostgreSQL database,
	// as a replica of it.
	database string
}

// newHarnessWith builds every harness: a real questiond logging to log,
// stopped in t.Cleanup the way cmd/questiond stops.
func newHarnessWith(t *testing.T, tu tuning, log *zap.Logger) *harness {
	t.Helper()
	if tu.events.Heartbeat == 0 {
		tu.events.Heartbeat = time.Hour
	}
	cfg := testserver.Config{API: tu.api, Events: tu.events, Store: tu.store, Journal: tu.journal, Logger: log}
	if onPostgres() && tu.journal == nil {
		cfg.DatabaseURL = pgtest.Database(t)
	}
	if tu.database != "" {
		cfg.DatabaseURL = tu.database
	}
	srv := testkit.Serve(t, cfg)
	return &harness{t: t, URL: srv.URL, store: srv.Store, bus: srv.Bus, api: srv.API}
}

// response is a finished HTTP exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("body %q is not the expected JSON: %v", r.Body, err)
	}
}

// do sends a request and fails the test on a transport error. A body given
// as a string is sent as-is; headers are name/value pairs, and an empty value
// removes that header (e.g. "Content-Type", "").
func (h *harness) do(method, path string, body any, headers ...string) response {
	h.t.Helper()
	res, err := h.request(method, path, body, headers...)
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// request is do for goroutines other than the test's own.
func (h *harness) request(method, path string, body any, headers ...string) (response, error) {
	return h.requestWith(context.Background(), http.DefaultClient, method, path, body, headers...)
}

// requestWith is request with ctx, through client.
func (h *harness) requestWith(ctx context.Context, client *http.Client, method, path string, body any, headers ...string) (response, error) {
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		reader = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return response{}, err
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.URL+path, reader)
	if err != nil {
		return response{}, err
	}
	if reader != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := client.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: data}, nil
}

// frame is one decoded /event frame.
type frame struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
	Raw        string          `json:"-"`
}

// stream is a live event stream parsed into frames.
type stream struct {
	frames chan frame
	cancel context.CancelFunc
}

// openStream connects to an event route, with headers (name, value, ...),
// and parses its frames. /global/event frames are unwrapped to their payload.
func (h *harness) openStream(path string, headers ...string) *stream {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.URL+path, nil)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		h.t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		h.t.Fatalf("GET %s: status %d", path, res.StatusCode)
	}
	s := &stream{frames: make(chan frame, 1024), cancel: cancel}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(s.frames)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				continue
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok {
				h.t.Errorf("unexpected line in event stream: %q", line)
				continue
			}
			var f frame
			if strings.HasPrefix(path, "/global/") {
				var g struct {
					Payload frame `json:"payload"`
				}
				_ = json.Unmarshal([]byte(data), &g)
				f = g.Payload
			} else {
				_ = json.Unmarshal([]byte(data), &f)
			}
			f.Raw = data
			s.frames <- f
		}
	}()
	h.t.Cleanup(func() { cancel(); <-done })
	return s
}

// next returns the next frame that is not a heartbeat.
func (s *stream) next(t *testing.T) frame {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case f, ok := <-s.frames:
			if !ok {
				t.Fatal("event stream ended")
			}
			if f.Type == "server.heartbeat" {
				continue
			}
			return f
		case <-timeout:
			t.Fatal("no event within 10s")
		}
	}
}

// expect returns the next frame and checks its type.
func (s *stream) expect(t *testing.T, typ string) frame {
	t.Helper()
	f := s.next(t)
	if f.Type != typ {
		t.Fatalf("got event %s (%s), want %s", f.Type, f.Raw, typ)
	}
	return f
}

// seedForm is the two-question form of the seed RFC.
func seedForm() map[string]any {
	return map[string]any{
		"message": "Diagnose the machine",
		"requestedSchema": json.RawMessage(`{
			"type": "object",
			"properties": {
				"model": {"type": "string", "title": "Model", "description": "Equipment model?", "enum": ["SY215C", "SY365H"]},
				"symptoms": {"type": "array", "title": "Symptoms", "description": "Select symptoms",
					"items": {"type": "string", "enum": ["Black smoke", "Low power", "Overheating"]}}
			},
			"required": ["model"]
		}`),
	}
}

// created is the agent's view of a created elicitation.
type created struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	SessionID string `json:"sessionID"`
	Result    *struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	} `json:"result"`
	Ending string `json:"ending"`
}

func (h *harness) create(body any) created {
	h.t.Helper()
	res := h.do(http.MethodPost, "/elicitations", body)
	if res.Status != http.StatusCreated {
		h.t.Fatalf("POST /elicitations: %d %s", res.Status, res.Body)
	}
	var c created
	res.json(h.t, &c)
	return c
}

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }
