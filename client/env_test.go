package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/questiond/questiond/client"
)

// tokenSeen starts a server that records the Authorization of the request it
// gets and answers 404, so Get returns at once.
func tokenSeen(t *testing.T) (*httptest.Server, func() string) {
	var mu sync.Mutex
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		answerJSON(w, http.StatusNotFound, `{"name":"NotFoundError","data":{"message":"no such elicitation"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() string { mu.Lock(); defer mu.Unlock(); return auth }
}

func TestNewReadsServerAndTokenFromTheEnvironment(t *testing.T) {
	srv, seen := tokenSeen(t)
	t.Setenv(client.EnvServer, srv.URL)
	t.Setenv(client.EnvToken, "env-token")
	c, err := client.New(client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), "eli_x", 0); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Get through $%s: %v, want ErrNotFound from the test server", client.EnvServer, err)
	}
	if got := seen(); got != "Bearer env-token" {
		t.Fatalf("Authorization %q, want the token of $%s", got, client.EnvToken)
	}
}

func TestExplicitOptionsWinOverTheEnvironment(t *testing.T) {
	srv, seen := tokenSeen(t)
	t.Setenv(client.EnvServer, "http://127.0.0.1:1") // nothing listens there
	t.Setenv(client.EnvToken, "env-token")
	c, err := client.New(client.Options{Server: srv.URL, Token: "flag-token"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(context.Background(), "eli_x", 0); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("Get: %v, want ErrNotFound from the explicit server", err)
	}
	if got := seen(); got != "Bearer flag-token" {
		t.Fatalf("Authorization %q, want the explicit token", got)
	}
}

func TestServerWithoutSchemeSaysWhatIsWanted(t *testing.T) {
	t.Setenv(client.EnvServer, "127.0.0.1:4601")
	_, err := client.New(client.Options{})
	if err == nil {
		t.Fatal("New accepted a server without a scheme")
	}
	msg := err.Error()
	for _, want := range []string{client.EnvServer, `"127.0.0.1:4601"`, "want a URL such as http://127.0.0.1:4097"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "first path segment") || strings.Contains(msg, "\n") {
		t.Errorf("error %q shows Go's parser internals or spans lines", msg)
	}
	for _, bad := range []string{"localhost:4097", "ftp://h", "http://", "http://h/?q=1", "http://h/#f", "http://[::1"} {
		if _, err := client.ParseServer(bad); err == nil || !strings.Contains(err.Error(), "want a URL such as") {
			t.Errorf("ParseServer(%q) = %v, want an error that shows the URL wanted", bad, err)
		}
	}
	for _, good := range []string{"http://127.0.0.1:4097", "https://q.example/prefix/"} {
		if _, err := client.ParseServer(good); err != nil {
			t.Errorf("ParseServer(%q): %v", good, err)
		}
	}
}

func TestUnreachableDaemonIsReportedAndBounded(t *testing.T) {
	var mu sync.Mutex
	var retries []error
	c, err := client.New(client.Options{
		Server:          "http://" + freeAddr(t), // nothing listens there
		MaxBackoff:      20 * time.Millisecond,
		GiveUpUnreached: 150 * time.Millisecond,
		OnRetry: func(err error, _ time.Duration) {
			mu.Lock()
			retries = append(retries, err)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = c.Elicit(ctx, client.Params{Message: "anyone?"})
	if !errors.Is(err, client.ErrUnreachable) {
		t.Fatalf("Elicit: %v, want ErrUnreachable before ctx ends", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Elicit waited until ctx ended, not GiveUpUnreached")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(retries) == 0 {
		t.Fatal("OnRetry was never called while the daemon refused connections")
	}
}

func TestReachedDaemonIsNotGivenUpOn(t *testing.T) {
	// 503 is an answer: questiond is there and restarting, so the bound for
	// a daemon never reached does not apply; only ctx ends the wait.
	var calls sync.WaitGroup
	calls.Add(1)
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(calls.Done)
		answerJSON(w, http.StatusServiceUnavailable, `{"name":"UnavailableError","data":{"message":"shutting down"}}`)
	}))
	defer srv.Close()
	c, err := client.New(client.Options{Server: srv.URL, MaxBackoff: 10 * time.Millisecond, GiveUpUnreached: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = c.Elicit(ctx, client.Params{Message: "anyone?"})
	if errors.Is(err, client.ErrUnreachable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Elicit against a daemon answering 503: %v, want ctx's deadline", err)
	}
	calls.Wait()
}

func TestOnRetrySeesFailuresWhileWaiting(t *testing.T) {
	var failedPolls atomic.Int64
	d := startDaemon(t, daemonConfig{wrap: intercept(
		func(r *http.Request) bool { return isPoll(r) && failedPolls.Add(1) == 1 },
		func(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
			answerJSON(w, http.StatusServiceUnavailable, `{"name":"UnavailableError","data":{"message":"restarting"}}`)
		})})
	ops := watch(t, d.URL)
	seen := make(chan error, 16)
	c := newClient(t, d.URL, client.Options{OnRetry: func(err error, _ time.Duration) { seen <- err }})
	out := elicitAsync(t, t.Context(), c, deployForm(t))
	if err := <-seen; !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("OnRetry got %v, want the poll's 503", err)
	}
	reject(t, d.URL, ops.asked(t).ID, "")
	if o := await(t, out); o.err != nil {
		t.Fatal(o.err)
	}
}
