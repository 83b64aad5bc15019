package ui

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/testserver"
)

const (
	operatorUser     = "opencode"
	operatorPassword = "a browser's password"
)

// daemon is questiond on a loopback port with an operator password; agents
// ask without tokens.
type daemon struct {
	t   *testing.T
	URL string
}

func startDaemon(t *testing.T) *daemon {
	t.Helper()
	return startDaemonAt(t, "")
}

// startDaemonAt listens on addr ("" is 127.0.0.1:0).
func startDaemonAt(t *testing.T, addr string) *daemon {
	t.Helper()
	srv, err := testserver.Start(testserver.Config{
		Addr:   addr,
		API:    httpapi.Options{Auth: httpapi.Auth{OperatorPassword: operatorPassword}, ListenAddr: addr},
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return &daemon{t: t, URL: srv.URL}
}

func (d *daemon) send(method, path, body, authorization string) (int, []byte) {
	d.t.Helper()
	req, err := http.NewRequest(method, d.URL+path, bytes.NewReader([]byte(body)))
	if err != nil {
		d.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, data
}

// ask creates an elicitation as an agent and returns its question id.
func (d *daemon) ask(body string) string {
	d.t.Helper()
	status, data := d.send(http.MethodPost, "/elicitations", body, "")
	if status != http.StatusCreated {
		d.t.Fatalf("POST /elicitations: %d %s", status, data)
	}
	var c struct{ ID string }
	_ = json.Unmarshal(data, &c)
	return c.ID
}

// result is what the agent gets back.
type result struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

// result waits (up to 10 s) for the agent's result of question id.
func (d *daemon) result(id string) result {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		status, data := d.send(http.MethodGet, "/elicitations/"+id+"?wait=5s", "", "")
		if status != http.StatusOK {
			d.t.Fatalf("GET /elicitations/%s: %d %s", id, status, data)
		}
		var e struct {
			Status string
			Result *result
		}
		_ = json.Unmarshal(data, &e)
		if e.Status == "resolved" && e.Result != nil {
			return *e.Result
		}
	}
	d.t.Fatalf("question %s got no answer", id)
	return result{}
}

// pending reports whether question id is still waiting for an answer.
func (d *daemon) pending(id string) bool {
	d.t.Helper()
	_, data := d.send(http.MethodGet, "/elicitations/"+id, "", "")
	var e struct{ Status string }
	_ = json.Unmarshal(data, &e)
	return e.Status == "pending"
}
