package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// A server without a scheme (QUESTIOND_SERVER=127.0.0.1:4601) is a one-line
// usage error that names where it came from and shows the URL wanted, not
// Go's "first path segment in URL cannot contain colon".
func TestAskServerWithoutSchemeSaysWhatIsWanted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		env    map[string]string
		args   []string
		source string
	}{
		{"env", map[string]string{"QUESTIOND_SERVER": "127.0.0.1:4601"}, nil, "QUESTIOND_SERVER"},
		{"flag", nil, []string{"--server", "127.0.0.1:4601"}, "--server"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"--message", "Hi", "--text"}, c.args...)
			status := ask(context.Background(), args, envOf(c.env), strings.NewReader(""), &stdout, &stderr)
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if status != askUsage || stdout.Len() != 0 {
				t.Fatalf("exit %d, stdout %q; want %d and nothing", status, stdout.String(), askUsage)
			}
			for _, want := range []string{c.source, `"127.0.0.1:4601"`, "want a URL such as http://127.0.0.1:4097"} {
				if !strings.Contains(first, want) {
					t.Errorf("first line %q does not contain %q", first, want)
				}
			}
			if strings.Contains(stderr.String(), "first path segment") {
				t.Errorf("stderr shows Go's parser error: %q", stderr.String())
			}
		})
	}
}

// freeAddr is a loopback host:port nothing listens on (until something
// else on the machine happens to take it).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// askInProcess runs `questiond ask args` against server in this process;
// done gives its exit status, after which stdout is complete.
func askInProcess(ctx context.Context, server string, args ...string) (stdout *bytes.Buffer, stderr *syncBuffer, done <-chan int) {
	stdout, stderr = &bytes.Buffer{}, &syncBuffer{}
	status := make(chan int, 1)
	go func() {
		status <- ask(ctx, args, envOf(map[string]string{"QUESTIOND_SERVER": server}), strings.NewReader(""), stdout, stderr)
	}()
	return stdout, stderr, status
}

// Stopped (timeout(1)'s SIGTERM, Ctrl-C) while the daemon was never reached,
// ask says that no question was asked, not that one was withdrawn.
func TestAskStoppedBeforeTheDaemonWasReachedSaysNoQuestionWasAsked(t *testing.T) {
	closed := "http://" + freeAddr(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stdout, stderr, done := askInProcess(ctx, closed, "--message", "Anyone?", "--text")
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(stderr.String(), closed+" is not answering") {
		if time.Now().After(deadline) {
			t.Fatalf("no notice within 15s; stderr %q", stderr.String())
		}
		time.Sleep(10 * time.Millisecond) // polling for the notice, not racing it
	}
	stop() // what the SIGTERM of timeout(1) does
	status := <-done
	got := stderr.String()
	if status != askFailed || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q; want %d and nothing", status, stdout.String(), askFailed)
	}
	if !strings.Contains(got, closed+" could not be reached, so no question was asked") || strings.Contains(got, "withdrawn") {
		t.Fatalf("stderr %q; want the unreachable daemon named and no withdrawn question", got)
	}
}

// After "not answering … still trying", ask says when the daemon answers
// again, so a script's log does not end on a failure that is over, and a
// restart of the daemon (durable store: the question survives) is told the
// same way. Before, the notice was the last word while ask went on waiting.
func TestAskSaysReconnectedWhenTheDaemonAnswersAgain(t *testing.T) {
	addr := freeAddr(t) // nothing listens there until the daemon starts below
	server := "http://" + addr
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	stdout, stderr, done := askInProcess(ctx, server, "--message", "Anyone?", "--confirm", "--content")
	waitForStderr := func(text string, count int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for strings.Count(stderr.String(), text) < count {
			if time.Now().After(deadline) {
				t.Fatalf("stderr never said %q %d times: %q", text, count, stderr.String())
			}
			time.Sleep(10 * time.Millisecond) // polling for the notice, not racing it
		}
	}
	listed := func(base string) []listedQuestion {
		t.Helper()
		var questions []listedQuestion
		deadline := time.Now().Add(15 * time.Second)
		for len(questions) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the question was never listed; stderr %q", stderr.String())
			}
			_, body := sendJSON(t, "GET", base+"/question", "")
			if err := json.Unmarshal([]byte(body), &questions); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond) // polling as an operator's client does
		}
		return questions
	}
	notAnswering, reconnected := server+" is not answering", "questiond ask: reconnected to "+server+"\n"
	waitForStderr(notAnswering, 1)
	if strings.Contains(stderr.String(), "reconnected") {
		t.Fatalf("reconnected before anything listened: %q", stderr.String())
	}
	dataDir := t.TempDir()
	daemonArgs := []string{"--store", "bolt", "--data-dir", dataDir, "--addr", addr, "--metrics-addr", "off"}
	base, stopFirst := startDaemon(t, nil, daemonArgs...)
	waitForStderr(reconnected, 1)
	listed(base)
	if err := stopFirst(); err != nil {
		t.Fatal(err)
	}
	waitForStderr(notAnswering, 2)
	if strings.Count(stderr.String(), "reconnected") != 1 {
		t.Fatalf("reconnected while the daemon was down: %q", stderr.String())
	}
	base, _ = startDaemon(t, nil, daemonArgs...)
	waitForStderr(reconnected, 2)
	q := listed(base)[0]
	if status, body := sendJSON(t, "POST", base+"/question/"+q.ID+"/reply", `{"answers":[["Yes"]]}`); status != 200 {
		t.Fatalf("reply: %d %s", status, body)
	}
	if status := <-done; status != askAccepted || stdout.String() != `{"answer":true}`+"\n" {
		t.Fatalf("exit %d, stdout %q; stderr %q", status, stdout.String(), stderr.String())
	}
	if got := stderr.String(); strings.Count(got, "reconnected") != 2 || strings.Count(got, "not answering") != 2 {
		t.Errorf("stderr %q; want each outage told and each return", got)
	}
}
