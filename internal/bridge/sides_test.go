package bridge_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"go.uber.org/zap/zaptest"

	"github.com/questiond/questiond/internal/bridge"
)

// An upstream that takes nothing more (it closed its stdin) while it stays
// up: the host's next message cannot be relayed, and the relay ends naming
// the upstream, not the host whose message it was.
func TestAWriteToTheUpstreamFailingIsTheUpstreamsFailure(t *testing.T) {
	_, c := questiond(t)
	hostEnd, hc := stdioPair(t, nil)
	fromUpstream, upstreamWrites, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	upstreamReads, toUpstream, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer upstreamWrites.Close() // the upstream stays up: it never writes, never ends
	upstreamReads.Close()        // and takes nothing more
	uc, err := (&bridge.StdioTransport{Reader: fromUpstream, Writer: toUpstream}).Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() {
		ran <- bridge.New(hc, uc, bridge.Options{Asker: c, Logger: zaptest.NewLogger(t)}).Run(context.Background())
	}()
	host, err := hostEnd.Connect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	ping := &jsonrpc.Request{ID: mustID(t, 1), Method: "ping"}
	if err := host.Write(t.Context(), ping); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-ran:
		if err == nil || !strings.HasPrefix(err.Error(), "upstream: ") || errors.Is(err, bridge.ErrUpstreamEnded) {
			t.Fatalf("Run returned %v; want the upstream's write failure, named upstream", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the relay did not end")
	}
}

func mustID(t *testing.T, n int64) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(n))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
