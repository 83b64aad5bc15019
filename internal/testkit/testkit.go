// Package testkit is the test support every questiond suite shares: the
// questiond binary built once and run as a process (over package launch),
// an in-process daemon with its cleanup registered (over testserver), an
// event-stream reader, and the TestMain that checks for leaked goroutines
// and stops the PostgreSQL server the suite started.
//
// It is for tests only; programs use package launch directly.
package testkit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/testenv"
	"github.com/questiond/questiond/internal/testkit/launch"
	"github.com/questiond/questiond/internal/testserver"
)

// Binary is cmd/questiond built from the tree as it is (launch.Build): one
// build shared by every test process.
func Binary(tb testing.TB) string {
	tb.Helper()
	return BinaryWith(tb, launch.BuildOptions{})
}

// BinaryWith is Binary built as opts say.
func BinaryWith(tb testing.TB, opts launch.BuildOptions) string {
	tb.Helper()
	bin, err := launch.Build(context.Background(), opts)
	if errors.Is(err, launch.ErrNoGo) {
		testenv.Missing(tb, "the go command", "put the Go toolchain on PATH")
	}
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Launch starts cmd as launch.Start does and kills it when the test ends
// (if it is still running); it fails the test if the process does not
// start listening.
func Launch(tb testing.TB, cmd *exec.Cmd, opts launch.Options) *launch.Process {
	tb.Helper()
	p, err := TryLaunch(tb, cmd, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TryLaunch is Launch returning the error, for tests of a start that fails.
func TryLaunch(tb testing.TB, cmd *exec.Cmd, opts launch.Options) (*launch.Process, error) {
	tb.Helper()
	p, err := launch.Start(cmd, opts)
	if err != nil {
		return nil, err
	}
	tb.Cleanup(p.Kill)
	return p, nil
}

// Serve starts questiond in this process as cfg says and stops it when the
// test ends, failing the test if stopping goes wrong.
func Serve(tb testing.TB, cfg testserver.Config) *testserver.Server {
	tb.Helper()
	s, err := testserver.Start(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("stopping questiond: %v", err)
		}
	})
	return s
}

// Main is a suite's TestMain: it runs the tests, stops the PostgreSQL
// server they started (pgtest), if any, and after a passing run fails it
// if goroutines are left (goleak, ignoring opts).
func Main(m *testing.M, opts ...goleak.Option) {
	goleak.VerifyTestMain(withPostgres{m}, opts...)
}

// withPostgres runs the tests, then stops the PostgreSQL server they
// started, if any.
type withPostgres struct{ m *testing.M }

func (w withPostgres) Run() int { return pgtest.Run(w.m) }

// StoreEnv switches the suites that honour it onto the PostgreSQL store:
// QUESTIOND_TEST_STORE=postgres.
const StoreEnv = "QUESTIOND_TEST_STORE"

// OnPostgres reports whether the suite runs on the PostgreSQL store.
func OnPostgres() bool { return os.Getenv(StoreEnv) == "postgres" }

// DatabaseURL is a fresh PostgreSQL database for tb's questiond when the
// suite runs on the PostgreSQL store, else "".
func DatabaseURL(tb testing.TB) string {
	tb.Helper()
	if !OnPostgres() {
		return ""
	}
	return pgtest.Database(tb)
}

// SendJSON sends body as application/json with method to url and returns
// the status and the body of the answer; it fails the test if there is no
// answer.
func SendJSON(tb testing.TB, method, url, body string) (int, string) {
	tb.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	status, data := Do(tb, http.DefaultClient, req)
	return status, string(data)
}

// Do sends req with c and returns the status and the body of the answer;
// it fails the test if there is no answer or its body cannot be read.
func Do(tb testing.TB, c *http.Client, req *http.Request) (int, []byte) {
	tb.Helper()
	res, err := c.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return res.StatusCode, data
}

// Answer is the answer to a request a test sent in the background.
type Answer struct {
	Status int
	Header http.Header // nil when the request failed
	Body   string      // the error's text when the request failed
}

// PostAsync posts body as application/json to url in a goroutine and
// sends its answer to the returned channel (buffered for one); a request
// that fails is an Answer with status 0 and the error as its body.
func PostAsync(url, body string) <-chan Answer {
	answer := make(chan Answer, 1)
	go func() {
		res, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			answer <- Answer{Body: err.Error()}
			return
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		answer <- Answer{res.StatusCode, res.Header, string(data)}
	}()
	return answer
}

// Delivery is a request a Webhook received, with its body.
type Delivery struct {
	Request *http.Request
	Body    []byte
}

// Webhook starts a server that answers every request 200 and sends it,
// with its body, to the returned channel (buffered for size). It is closed
// when the test ends, if not before.
func Webhook(tb testing.TB, size int) (*httptest.Server, <-chan Delivery) {
	tb.Helper()
	got := make(chan Delivery, size)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- Delivery{r, body}
	}))
	tb.Cleanup(hook.Close)
	return hook, got
}
