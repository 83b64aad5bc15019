package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Hosts give a tool call a deadline (OpenCode: 60 s by default) that
// progress notifications on the call's progressToken reset; a human takes
// longer than that. While a question the relay asked waits for the
// operator, it sends the host progress on the calls it may be waiting for,
// every Options.ProgressInterval: an input request's own call, and for an
// elicitation/create (which names no call) every tool call in flight.
//
// The MCP spec wants a token's progress to increase. The relay keeps the
// last value the upstream sent on each token and sends the next float above
// it, so the upstream's own next value (in any real step) still increases.

// DefaultProgressInterval is Options.ProgressInterval's default: well
// within the shortest deadlines hosts give tool calls.
const DefaultProgressInterval = 10 * time.Second

const methodProgress = "notifications/progress"

// progressToken reads params._meta.progressToken, or nil.
func progressToken(params json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte(`"progressToken"`)) {
		return nil // most requests: not decoded on the way
	}
	var p struct {
		Meta struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Meta.Token) == 0 || string(p.Meta.Token) == "null" {
		return nil
	}
	return p.Meta.Token
}

// sawProgress notes the value of the upstream's progress notification.
func (r *Relay) sawProgress(params json.RawMessage) {
	var p struct {
		Token    json.RawMessage `json:"progressToken"`
		Progress float64         `json:"progress"`
	}
	if json.Unmarshal(params, &p) != nil || len(p.Token) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if last, ok := r.progress[string(p.Token)]; !ok || p.Progress > last {
		r.progress[string(p.Token)] = p.Progress
	}
}

// keepAlive sends progress while questions wait, until ctx ends.
func (r *Relay) keepAlive(ctx context.Context) {
	interval := r.opts.ProgressInterval
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, token := range r.waitingTokens() {
			r.sendProgress(ctx, token)
		}
	}
}

// waitingTokens are the progress tokens of the host's calls that a question
// may be holding up now.
func (r *Relay) waitingTokens() []json.RawMessage {
	r.mu.Lock()
	asking := len(r.asks) > 0
	var held []json.RawMessage
	for _, f := range r.fulfilling {
		if f.token != nil {
			held = append(held, f.token)
		}
	}
	r.mu.Unlock()
	tokens := map[string]json.RawMessage{}
	if asking {
		for _, s := range r.toUpstream.inFlight(methodCallTool) {
			if s.token != nil {
				tokens[string(s.token)] = s.token
			}
		}
	}
	for _, token := range held {
		tokens[string(token)] = token
	}
	out := make([]json.RawMessage, 0, len(tokens))
	for _, t := range tokens {
		out = append(out, t)
	}
	return out
}

func (r *Relay) sendProgress(ctx context.Context, token json.RawMessage) {
	r.progressMu.Lock()
	defer r.progressMu.Unlock()
	r.mu.Lock()
	next := math.Nextafter(r.progress[string(token)], math.Inf(1))
	r.progress[string(token)] = next
	r.mu.Unlock()
	params, _ := json.Marshal(map[string]any{
		"progressToken": token,
		"progress":      next,
		"message":       "waiting for an operator to answer in questiond",
	})
	_ = r.host.Write(ctx, &jsonrpc.Request{Method: methodProgress, Params: params})
}
