package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// Multi round-trip requests (MCP 2026-07-28, SEP-2322): instead of sending
// elicitation/create, an upstream answers tools/call, prompts/get or
// resources/read with {"resultType":"input_required","inputRequests":{…},
// "requestState":…}, and the client calls again with "inputResponses" and
// the requestState as it came. The SDK's client does that loop itself; at
// the message level it is the relay's: it asks questiond for each
// elicitation and sends the call again, and the host sees only the final
// result.

// retriable are the methods whose results may ask for input.
var retriable = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// fulfilment is a host's call whose input the relay is asking for.
type fulfilment struct {
	withdraw context.CancelFunc
	token    json.RawMessage // the call's progressToken, or nil
}

// maxInputRounds bounds the rounds of one call, as the SDK's client does.
const maxInputRounds = 10

type inputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type inputRequired struct {
	ResultType    string                  `json:"resultType"`
	InputRequests map[string]inputRequest `json:"inputRequests"`
	RequestState  json.RawMessage         `json:"requestState"`
}

// inputsToAsk reads a response to s as a request for input the relay
// answers: only elicitations (a host that would answer them itself,
// Options.PreferHost, or any other kind of input goes to the host as it
// came).
func (r *Relay) inputsToAsk(s sent, m *jsonrpc.Response) (map[string]inputRequest, json.RawMessage, bool) {
	if !retriable[s.method] || m.Error != nil || r.hostAnswers() {
		return nil, nil, false
	}
	var res inputRequired
	if json.Unmarshal(m.Result, &res) != nil || res.ResultType != "input_required" || len(res.InputRequests) == 0 {
		return nil, nil, false
	}
	for _, in := range res.InputRequests {
		if in.Method != methodElicit {
			return nil, nil, false
		}
	}
	return res.InputRequests, res.RequestState, true
}

// fulfil asks questiond for every input, then sends the call s again with
// the answers. The host cancelling its call withdraws the questions.
func (r *Relay) fulfil(ctx context.Context, s sent, inputs map[string]inputRequest, state json.RawMessage) {
	r.retryAfter(ctx, s, func(qctx context.Context) (json.RawMessage, error) {
		responses, err := r.askInputs(qctx, s, inputs)
		if err != nil {
			return nil, err
		}
		params, err := withInputResponses(s.params, responses, state)
		if err != nil {
			return nil, internalError("sending the call again with the answers: " + err.Error())
		}
		return params, nil
	})
}

// retryAfter sends the call s again with the params gather returns once it
// has asked what the call needs; gather's error goes to the host instead.
// The host cancelling its call withdraws what gather asks.
func (r *Relay) retryAfter(ctx context.Context, s sent, gather func(context.Context) (json.RawMessage, error)) {
	qctx, withdraw := context.WithCancel(ctx)
	key := s.orig.Raw()
	r.mu.Lock()
	rounds := r.rounds[key] + 1
	r.rounds[key] = rounds
	r.fulfilling[key] = fulfilment{withdraw: withdraw, token: s.token}
	r.mu.Unlock()
	r.asking.Go(func() {
		defer withdraw()
		params, err := gather(qctx)
		r.mu.Lock()
		_, live := r.fulfilling[key]
		delete(r.fulfilling, key)
		r.mu.Unlock()
		if !live || qctx.Err() != nil {
			r.forgetRounds(key)
			return
		}
		if err == nil && rounds >= maxInputRounds {
			err = internalError("the upstream asked for input more than 10 times for one call")
		}
		if err != nil {
			r.forgetRounds(key)
			r.respondHost(ctx, s.orig, err)
			return
		}
		if err := r.up.Write(ctx, &jsonrpc.Request{ID: r.toUpstream.relay(s.orig, s.method, params), Method: s.method, Params: params}); err != nil && ctx.Err() == nil {
			r.log.Warn("bridge: sending the call again to the upstream failed", zap.Error(err))
		}
	})
}

// askInputs asks each elicitation the call s needs at once and waits for
// every answer; the first failure withdraws the others.
func (r *Relay) askInputs(ctx context.Context, s sent, inputs map[string]inputRequest) (map[string]json.RawMessage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu        sync.Mutex
		responses = map[string]json.RawMessage{}
		first     error
		wg        sync.WaitGroup
	)
	for k, in := range inputs {
		a, err := r.question(in.Params)
		if err != nil {
			return nil, err
		}
		a.params.MCPTool = r.mcpTool(s)
		wg.Go(func() {
			res, err := r.opts.Asker.Elicit(ctx, a.params)
			result, err := r.answer(a, res, err)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
				cancel()
			}
			responses[k] = result
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return responses, nil
}

// withInputResponses is a call's params with the answers and the
// upstream's requestState, untouched.
func withInputResponses(params json.RawMessage, responses map[string]json.RawMessage, state json.RawMessage) (json.RawMessage, error) {
	p := map[string]json.RawMessage{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, err
		}
	}
	var err error
	if p["inputResponses"], err = json.Marshal(responses); err != nil {
		return nil, err
	}
	delete(p, "requestState")
	if len(state) > 0 && string(state) != "null" {
		p["requestState"] = state
	}
	return json.Marshal(p)
}

// stopFulfilling withdraws the input asked for the host's request id, and
// reports whether there was any.
func (r *Relay) stopFulfilling(id any) bool {
	r.mu.Lock()
	f, ok := r.fulfilling[id]
	delete(r.fulfilling, id)
	r.mu.Unlock()
	if ok {
		f.withdraw()
		r.forgetRounds(id)
	}
	return ok
}

func (r *Relay) forgetRounds(id any) {
	r.mu.Lock()
	delete(r.rounds, id)
	r.mu.Unlock()
}

func (r *Relay) respondHost(ctx context.Context, id jsonrpc.ID, err error) {
	if werr := r.host.Write(ctx, &jsonrpc.Response{ID: id, Error: err}); werr != nil && ctx.Err() == nil {
		r.log.Warn("bridge: answering the host failed", zap.Error(werr))
	}
}

// withElicitationMeta adds form-mode elicitation to the client capabilities
// a 2026-07-28 request carries in its _meta, when it carries them.
func withElicitationMeta(params json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte(mcp.MetaKeyClientCapabilities)) {
		return params // every request before 2026-07-28: not decoded on the way
	}
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return params
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(p["_meta"], &meta) != nil || meta == nil {
		return params
	}
	raw, ok := meta[mcp.MetaKeyClientCapabilities]
	if !ok {
		return params
	}
	caps := map[string]json.RawMessage{}
	if json.Unmarshal(raw, &caps) != nil || caps == nil {
		return params
	}
	caps["elicitation"] = json.RawMessage(`{"form":{},"url":{}}`)
	var err error
	if meta[mcp.MetaKeyClientCapabilities], err = json.Marshal(caps); err != nil {
		return params
	}
	if p["_meta"], err = json.Marshal(meta); err != nil {
		return params
	}
	out, err := json.Marshal(p)
	if err != nil {
		return params
	}
	return out
}
