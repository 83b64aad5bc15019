package client_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/questiond/questiond/client"
)

// originTransport sends every request as a page from origin would.
type originTransport struct{ origin string }

func (o originTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Origin", o.origin)
	return http.DefaultTransport.RoundTrip(r)
}

// A real questiond refuses a write from a foreign browser origin: 403.
func TestForbiddenIsTyped(t *testing.T) {
	d := startDaemon(t, daemonConfig{})
	c := newClient(t, d.URL, client.Options{HTTPClient: &http.Client{Transport: originTransport{"https://evil.example"}}})
	_, err := c.Create(t.Context(), deployForm(t))
	var qe *client.Error
	if !errors.Is(err, client.ErrForbidden) || !errors.As(err, &qe) || qe.Name != "Forbidden" || qe.Message == "" {
		t.Fatalf("a cross-origin create gave %v, want ErrForbidden with a message", err)
	}
	if d.created.Load() != 0 {
		t.Fatal("a refused create created a question")
	}
}

// Error bodies of every shape questiond (or something in front of it) sends
// decode into an *Error that matches its sentinel by status or by name.
func TestErrorBodiesDecode(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
		want                    client.Error
		is                      error
	}{
		{"named", "application/json", `{"name":"BadRequest","data":{"message":"bad wait","kind":"Query"}}`, 400,
			client.Error{Status: 400, Name: "BadRequest", Kind: "Query", Message: "bad wait"}, client.ErrBadRequest},
		{"tagged", "application/json", `{"_tag":"QuestionNotFoundError","requestID":"que_1","message":"Question request not found: que_1"}`, 404,
			client.Error{Status: 404, Name: "QuestionNotFoundError", Message: "Question request not found: que_1"}, client.ErrNotFound},
		{"empty 401", "", ``, 401, client.Error{Status: 401, Name: "Unauthorized"}, client.ErrUnauthorized},
		{"plain text 415", "text/plain", `Unsupported content-type: text/plain`, 415,
			client.Error{Status: 415, Name: "UnsupportedMediaType", Message: "Unsupported content-type: text/plain"}, nil},
		{"proxy page 503", "text/html", `<html><body>upstream down</body></html>`, 503,
			client.Error{Status: 503, Name: "ServiceUnavailable"}, client.ErrUnavailable},
		{"unknown status", "text/plain", `teapot`, 418, client.Error{Status: 418, Name: "I'm a teapot", Message: "teapot"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			c := newClient(t, ts.URL, client.Options{})
			_, err := c.Get(t.Context(), "que_1", 0)
			var qe *client.Error
			if !errors.As(err, &qe) || *qe != tc.want {
				t.Fatalf("got %#v, want %#v", qe, tc.want)
			}
			for _, s := range []error{client.ErrBadRequest, client.ErrNotFound, client.ErrUnauthorized, client.ErrForbidden, client.ErrTooMany, client.ErrUnavailable} {
				if errors.Is(err, s) != (s == tc.is) {
					t.Fatalf("errors.Is(%v, %v) = %v", err, s, errors.Is(err, s))
				}
			}
		})
	}
}

func TestNewChecksOptions(t *testing.T) {
	for _, server := range []string{"127.0.0.1:4097", "ftp://host", "http://", "http://h/?x=1", "http://h/%zz"} {
		if _, err := client.New(client.Options{Server: server}); err == nil {
			t.Errorf("New accepted server %q", server)
		}
	}
	if _, err := client.New(client.Options{PollWait: -1}); err == nil {
		t.Error("New accepted a negative PollWait")
	}
	if _, err := client.New(client.Options{Server: "https://questions.example.com/base/"}); err != nil {
		t.Errorf("New refused a base URL with a path: %v", err)
	}
}
