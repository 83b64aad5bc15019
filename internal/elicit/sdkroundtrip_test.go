package elicit_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/testkit/mcptest"
)

// roundTripThroughSDK hands content to a real MCP Go SDK client as its
// answer to a real server's elicitation over in-memory transports, on
// protocol 2025-11-25 where both the client and the server validate accepted
// content against the requested schema. It fails the test unless the
// server's tool receives the content unchanged.
func roundTripThroughSDK(t testing.TB, rawSchema string, content elicit.Content) {
	t.Helper()
	schema, err := sdkSchema([]byte(rawSchema))
	if err != nil {
		t.Fatal(err)
	}
	encoded, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	var plain map[string]any
	if err := json.Unmarshal(encoded, &plain); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := mcptest.RoundTrip(ctx, schema, plain)
	if err != nil {
		t.Fatalf("content %s: %v", encoded, err)
	}
	if got.Content == nil {
		got.Content = map[string]any{} // the SDK omits empty content on the wire
	}
	gotJSON, _ := json.Marshal(got.Content)
	if got.Action != "accept" || string(gotJSON) != string(encoded) {
		t.Fatalf("the tool received %s %s, want accept %s", got.Action, gotJSON, encoded)
	}
}

// TestSDKRoundTripRejectsBadContent proves the round trip can fail: content
// that breaks the schema is refused by the SDK.
func TestSDKRoundTripRejectsBadContent(t *testing.T) {
	ft := &fakeT{TB: t}
	func() {
		defer func() { _ = recover() }()
		roundTripThroughSDK(ft, namedKeysSchema, elicit.Content{"model": "not an option"})
	}()
	if !ft.failed {
		t.Fatal("content outside the enum passed the SDK round trip")
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Fatal(args ...any)                 { f.failed = true; panic("fatal") }
func (f *fakeT) Fatalf(format string, args ...any) { f.failed = true; panic("fatal") }
func (f *fakeT) Helper()                           {}
