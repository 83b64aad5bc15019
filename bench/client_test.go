package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/questiond/questiond/bench/workload"
)

// longPoll is the agent's wait for a result; far longer than any exchange.
const longPoll = "30s"

// client speaks to either server the same way, so that whatever the client
// costs (it shares the machine) is the same on both sides of a ratio.
type client struct {
	base      string
	transport *http.Transport
	http      *http.Client
	// authorization, when set, is sent as the Authorization header of
	// every request: an agent's bearer token or the operator's password.
	authorization string
}

// newClient keeps up to conns connections open to the server, so a
// benchmark measures requests rather than connection set-up and never runs
// out of ephemeral ports.
func newClient(base string, conns int) *client {
	t := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &client{base: base, transport: t, http: &http.Client{Transport: t}}
}

func (c *client) close() { c.transport.CloseIdleConnections() }

func (c *client) authorize(req *http.Request) {
	if c.authorization != "" {
		req.Header.Set("Authorization", c.authorization)
	}
}

// exchange sends one request, checks the status and decodes the JSON answer
// into into (when not nil). The body is always read to the end so the
// connection goes back to the pool.
func (c *client) exchange(ctx context.Context, method, path string, body []byte, want int, into any) error {
	var reader io.Reader
	if body != nil {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, reader)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.authorize(req)
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, want, data)
	}
	if into != nil {
		if err := json.Unmarshal(data, into); err != nil {
			return fmt.Errorf("%s %s: %w in %s", method, path, err, data)
		}
	}
	return nil
}

// ask is the agent's POST /elicitations of the seed form; it returns the id.
func (c *client) ask(ctx context.Context) (string, error) {
	var created struct {
		ID string `json:"id"`
	}
	if err := c.exchange(ctx, http.MethodPost, "/elicitations", workload.SeedForm, http.StatusCreated, &created); err != nil {
		return "", err
	}
	if created.ID == "" {
		return "", fmt.Errorf("POST /elicitations: no id in the answer")
	}
	return created.ID, nil
}

// collect is the agent's long-poll for the result, which must be accept.
func (c *client) collect(ctx context.Context, id string) error {
	var got struct {
		Status string `json:"status"`
		Result struct {
			Action string `json:"action"`
		} `json:"result"`
	}
	if err := c.exchange(ctx, http.MethodGet, "/elicitations/"+id+"?wait="+longPoll, nil, http.StatusOK, &got); err != nil {
		return err
	}
	if got.Status != "resolved" || got.Result.Action != "accept" {
		return fmt.Errorf("GET /elicitations/%s: %s with action %q, want resolved with accept", id, got.Status, got.Result.Action)
	}
	return nil
}

// reply is the operator's answer to question id.
func (c *client) reply(ctx context.Context, id string) error {
	var ok bool
	if err := c.exchange(ctx, http.MethodPost, "/question/"+id+"/reply", workload.SeedAnswers, http.StatusOK, &ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("POST /question/%s/reply: answered false", id)
	}
	return nil
}

// list is the operator's GET /question; it returns the pending ids in order.
func (c *client) list(ctx context.Context) ([]string, error) {
	var questions []struct {
		ID string `json:"id"`
	}
	if err := c.exchange(ctx, http.MethodGet, "/question", nil, http.StatusOK, &questions); err != nil {
		return nil, err
	}
	ids := make([]string, len(questions))
	for i, q := range questions {
		ids[i] = q.ID
	}
	return ids, nil
}

// eventStream is one GET /event subscription read frame by frame.
type eventStream struct {
	body   io.ReadCloser
	reader *bufio.Reader
}

// subscribe opens GET /event and reads its first frame, so that once it
// returns the subscription is registered and misses nothing published later.
func (c *client) subscribe(ctx context.Context) (*eventStream, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/event", nil)
	if err != nil {
		return nil, err
	}
	c.authorize(req)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, fmt.Errorf("GET /event: status %d", res.StatusCode)
	}
	s := &eventStream{body: res.Body, reader: bufio.NewReaderSize(res.Body, 64<<10)}
	first, err := s.next()
	if err != nil {
		s.body.Close()
		return nil, fmt.Errorf("GET /event: %w", err)
	}
	if !bytes.Contains(first, []byte(`"type":"server.connected"`)) {
		s.body.Close()
		return nil, fmt.Errorf("GET /event: first frame %s, want server.connected", first)
	}
	return s, nil
}

// next returns the JSON of the next frame. The slice is only valid until the
// following call.
func (s *eventStream) next() ([]byte, error) {
	for {
		line, err := s.reader.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\n")
		if len(line) == 0 {
			continue // the blank line that ends a frame
		}
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			return nil, fmt.Errorf("unexpected line in an event stream: %q", line)
		}
		return data, nil
	}
}

func (s *eventStream) close() { s.body.Close() }

// typeAsked marks a question.asked frame in either server's framing; looking
// for it costs the reader far less than decoding every frame.
var typeAsked = []byte(`"type":"question.asked"`)

// askedID returns the question id of a question.asked frame.
func askedID(frame []byte) (string, error) {
	var event struct {
		Properties struct {
			ID string `json:"id"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(frame, &event); err != nil || event.Properties.ID == "" {
		return "", fmt.Errorf("question.asked frame without an id: %s", frame)
	}
	return event.Properties.ID, nil
}
