package bridge_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/bridge"
)

// rawEnd is one side of the relay as bytes on pipes: what the test writes,
// the relay reads, and the other way.
type rawEnd struct {
	w     io.WriteCloser
	r     *bufio.Reader
	lines chan string
}

// rawPair joins a relay's stdio connection to a rawEnd.
func rawPair(t *testing.T) (*rawEnd, *bridge.StdioTransport) {
	t.Helper()
	toRelay, fromTest, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	toTest, fromRelay, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	end := &rawEnd{w: fromTest, r: bufio.NewReader(toTest), lines: make(chan string, 16)}
	go func() {
		defer close(end.lines)
		for {
			line, err := end.r.ReadString('\n')
			if err != nil {
				return
			}
			end.lines <- strings.TrimSuffix(line, "\n")
		}
	}()
	t.Cleanup(func() { _ = fromTest.Close(); _ = toTest.Close() })
	return end, &bridge.StdioTransport{Reader: toRelay, Writer: fromRelay}
}

func (e *rawEnd) send(t *testing.T, text string) {
	t.Helper()
	if _, err := io.WriteString(e.w, text); err != nil {
		t.Fatal(err)
	}
}

func (e *rawEnd) next(t *testing.T) string {
	t.Helper()
	select {
	case line, ok := <-e.lines:
		if !ok {
			t.Fatal("the relay closed its side")
		}
		return line
	case <-time.After(10 * time.Second):
		t.Fatal("nothing came from the relay")
	}
	return ""
}

// expect reads the next line and compares it with want.
func (e *rawEnd) expect(t *testing.T, what, want string) {
	t.Helper()
	if got := e.next(t); got != want {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// The bridge's stdio relay, byte for byte: what it only passes on keeps
// every byte but its id (the relay's own id upstream, the host's own back),
// white space, key order, escapes and numbers included; a JSON-RPC batch
// gets its answer as one batch; a message spread over several lines, which
// the SDK's connections read, is relayed on one line.
func TestTheStdioRelayKeepsTheBytesOfWhatItPasses(t *testing.T) {
	host, hostT := rawPair(t)
	up, upT := rawPair(t)
	hc, err := hostT.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	uc, err := upT.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	finished := make(chan error, 1)
	go func() {
		finished <- bridge.New(hc, uc, bridge.Options{Name: "raw", Logger: zaptest.NewLogger(t)}).Run(context.Background())
	}()

	host.send(t, `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{ "name" : "echo", "arguments":{"text":"\u00e9 <b> 1.50e3"}}}`+"\n")
	up.expect(t, "the call upstream", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{ "name" : "echo", "arguments":{"text":"\u00e9 <b> 1.50e3"}}}`)
	up.send(t, `{"result":{"content":[{"type":"text","text":"é <b>"}], "n": 1.50e3},"id":1,"jsonrpc":"2.0"}`+"\r\n")
	host.expect(t, "the result to the host", `{"result":{"content":[{"type":"text","text":"é <b>"}], "n": 1.50e3},"id":"call-1","jsonrpc":"2.0"}`)

	up.send(t, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`+"\n")
	host.expect(t, "a notification to the host", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
	up.send(t, `{"jsonrpc":"2.0","id":"u-7","method":"roots/list"}`+"\n")
	host.expect(t, "the upstream's request to the host", `{"jsonrpc":"2.0","id":1,"method":"roots/list"}`)
	host.send(t, "\n  \n"+`{"jsonrpc":"2.0","id":1,"result":{"roots":[]}}`+"\n")
	up.expect(t, "the host's response upstream", `{"jsonrpc":"2.0","id":"u-7","result":{"roots":[]}}`)

	host.send(t, "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 5,\n  \"method\": \"ping\"\n}\n")
	up.expect(t, "a message spread over lines, on one", `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	up.send(t, `{"jsonrpc":"2.0","id":2,"result":{}}`+"\n")
	host.expect(t, "its response", `{"jsonrpc":"2.0","id":5,"result":{}}`)

	host.send(t, `[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]`+"\n")
	up.expect(t, "a batch's first request", `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	up.expect(t, "its notification", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	up.expect(t, "its second request", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	up.send(t, `{"jsonrpc":"2.0","id":4,"result":{"tools":[]}}`+"\n")
	up.send(t, `{"jsonrpc":"2.0","id":3,"result":{}}`+"\n")
	host.expect(t, "the batch's answer", `[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":"b","result":{"tools":[]}}]`)

	host.send(t, `{"jsonrpc":"2.0","id":9,"method":"ping","extra":true}`+"\n")
	up.expect(t, "a message with a key JSON-RPC has not, as the SDK relays it", `{"jsonrpc":"2.0","id":5,"method":"ping"}`)

	_ = host.w.Close() // the host leaves
	select {
	case err := <-finished:
		if err != nil {
			t.Fatalf("Run returned %v after the host left, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not end when the host closed its side")
	}
}

// The bridge's stdin as a host's process launcher hands it over (a pipe in
// blocking mode): closing the connection ends a read waiting for input, so
// that the relay ends when the upstream does, whatever the host does.
func TestClosingTheStdioConnectionEndsAWaitingRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	_ = r.Fd() // which leaves it in blocking mode, as a child process gets it
	conn, err := (&bridge.StdioTransport{Reader: r, Writer: nopCloser{io.Discard}}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		read <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the read wait
	_ = conn.Close()
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("Read returned a message from an empty pipe")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the waiting Read")
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
