package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// URLElicitationRequiredError (-32042, MCP 2025-11-25): instead of sending
// elicitation/create, a server may fail a request with this error and the
// URL-mode elicitations it needs in its data; the client has the user open
// them and calls again. The relay asks the operator each (as a URL
// question), waits for the server's notifications/elicitation/complete of
// each one consented to, and sends the call again; a decline or cancel
// gives the host the server's error as it came.

const codeURLElicitationRequired = -32042

// urlsRequired reads a response to s as the error the relay answers.
func (r *Relay) urlsRequired(s sent, m *jsonrpc.Response) ([]json.RawMessage, bool) {
	var werr *jsonrpc.Error
	if !retriable[s.method] || !errors.As(m.Error, &werr) || werr.Code != codeURLElicitationRequired || r.hostAnswers() {
		return nil, false
	}
	var data struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if json.Unmarshal(werr.Data, &data) != nil || len(data.Elicitations) == 0 {
		return nil, false
	}
	return data.Elicitations, true
}

// openURLs asks the operator to open each URL and sends the call s again
// once every one has been completed.
func (r *Relay) openURLs(ctx context.Context, s sent, elicitations []json.RawMessage, refusal error) {
	r.retryAfter(ctx, s, func(qctx context.Context) (json.RawMessage, error) {
		asks := make([]asked, len(elicitations))
		for i, raw := range elicitations {
			a, err := r.question(raw)
			if err != nil {
				return nil, err
			}
			if a.elicitationID == "" {
				return nil, invalidParams("a URLElicitationRequiredError names an elicitation that is not URL mode")
			}
			a.params.MCPTool = r.mcpTool(s)
			asks[i] = a
		}
		ctx, cancel := context.WithCancel(qctx)
		defer cancel()
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			failed error
		)
		for _, a := range asks {
			wg.Go(func() {
				if err := r.openURL(ctx, a, refusal); err != nil {
					mu.Lock()
					if failed == nil {
						failed = err
						cancel()
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if failed != nil {
			return nil, failed
		}
		return s.params, nil
	})
}

// openURL asks one URL question and waits until its elicitation is
// completed; a decline or cancel is refusal.
func (r *Relay) openURL(ctx context.Context, a asked, refusal error) error {
	done := r.awaitCompletion(a.elicitationID)
	defer r.forgetCompletion(a.elicitationID)
	qctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		select {
		case <-done:
			stop() // completed before the operator answered: the question goes
		case <-qctx.Done():
		}
	}()
	res, err := r.opts.Asker.Elicit(qctx, a.params)
	select {
	case <-done:
		return nil
	default:
	}
	if err != nil {
		_, err = r.answer(a, res, err)
		return err
	}
	var result struct{ Action string }
	if json.Unmarshal(urlResult(res), &result) != nil || result.Action != "accept" {
		return refusal
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (r *Relay) awaitCompletion(id string) <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	done := make(chan struct{})
	r.awaiting[id] = done
	return done
}

func (r *Relay) forgetCompletion(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.awaiting, id)
}
