package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"
)

// Options configure a Relay.
type Options struct {
	Asker  Asker  // questiond, as the bridge's agent
	Server string // questiond's URL, for messages
	// Name is what operators know the upstream by: its questions' session
	// is titled "<Name> via <the host's name>".
	Name string
	// SessionID, Directory and Timeout route and bound the questions (see
	// client.Params).
	SessionID string
	Directory string
	Timeout   time.Duration
	// PreferHost hands elicitations to a host that declared elicitation
	// itself, instead of asking questiond.
	PreferHost bool
	// ProgressInterval is how often the host hears progress on the calls a
	// waiting question holds up; 0 means DefaultProgressInterval.
	ProgressInterval time.Duration
	Logger           *zap.Logger
}

// Method names the relay looks at; every other passes as it is.
const (
	methodInitialize = "initialize"
	methodElicit     = "elicitation/create"
	methodCancelled  = "notifications/cancelled"
	methodCallTool   = "tools/call"

	methodElicitationComplete = "notifications/elicitation/complete"
)

// ErrUpstreamEnded: the upstream server closed its side (exited), so the
// relay ended.
var ErrUpstreamEnded = errors.New("the upstream MCP server ended")

// Relay joins one host and one upstream. Run it once.
type Relay struct {
	opts     Options
	log      *zap.Logger
	host, up mcp.Connection

	toUpstream *idTable // the host's requests, as relayed upstream
	toHost     *idTable // the upstream's requests, as relayed to the host

	// progressMu orders the progress the host hears (see progress.go); it
	// is taken before mu, never after.
	progressMu sync.Mutex
	mu         sync.Mutex
	client     host                     // from the host's initialize
	asks       map[any]pendingAsk       // upstream request id → its question
	fulfilling map[any]fulfilment       // host request id → the input asked for it
	rounds     map[any]int              // host request id → input rounds so far
	urls       map[string]urlAsk        // a URL-mode elicitation's id → its request
	awaiting   map[string]chan struct{} // a URL-mode elicitation's id → closed when the upstream completes it
	progress   map[string]float64       // progress token → the last value the host heard on it
	asking     sync.WaitGroup           // the questions being asked
}

// New returns a relay between a host's and an upstream's connection.
func New(hostConn, upstream mcp.Connection, opts Options) *Relay {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	return &Relay{opts: opts, log: opts.Logger, host: hostConn, up: upstream,
		toUpstream: newIDTable(), toHost: newIDTable(),
		asks: map[any]pendingAsk{}, fulfilling: map[any]fulfilment{}, rounds: map[any]int{}, progress: map[string]float64{}, urls: map[string]urlAsk{}, awaiting: map[string]chan struct{}{}}
}

// side is the end of one direction of the relay.
type side struct {
	name string
	err  error
}

// sideOf is the side whose failure ended a pump reading from: from itself
// when reading failed, the side a write failed to (see pump).
func sideOf(from string, err error) side {
	var w *writeFailed
	if errors.As(err, &w) {
		return side{w.to, w.err}
	}
	return side{from, err}
}

// writeFailed is the error of a write to side to.
type writeFailed struct {
	to  string
	err error
}

func (w *writeFailed) Error() string { return w.err.Error() }
func (w *writeFailed) Unwrap() error { return w.err }

// Run relays until the host or the upstream ends, or ctx does. Before it
// returns it withdraws the questions still asked and closes both
// connections. The host closing its side is a normal end (nil); the
// upstream's ending is ErrUpstreamEnded.
func (r *Relay) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan side, 2)
	go func() { ended <- sideOf("host", r.pump(ctx, r.host, "upstream", r.fromHost, r.fastFromHost)) }()
	go func() { ended <- sideOf("upstream", r.pump(ctx, r.up, "host", r.fromUpstream, r.fastFromUpstream)) }()
	var keeping sync.WaitGroup
	keeping.Go(func() { r.keepAlive(ctx) })
	first := <-ended
	unanswered := r.pendingAsks()
	cancel()        // withdraws every question still asked
	r.asking.Wait() // and waits until questiond has heard of it
	keeping.Wait()
	if first.name == "host" {
		// The upstream lives on until it is closed: its elicitations get
		// cancel, so that its handlers end (an HTTP server's session
		// closes only once they have).
		r.cancelUpstream(unanswered)
	}
	_ = r.up.Close()
	_ = r.host.Close()
	<-ended
	switch {
	case first.name == "host" && (first.err == nil || errors.Is(first.err, io.EOF)):
		return nil
	case first.name == "upstream" && (first.err == nil || errors.Is(first.err, io.EOF)):
		return ErrUpstreamEnded
	case ctx.Err() != nil && first.err != nil && errors.Is(first.err, context.Canceled):
		return nil
	}
	return fmt.Errorf("%s: %w", first.name, first.err)
}

// pump reads one side and hands each message to handle until the side
// ends or a message cannot be relayed. The bridge's own stdio connections
// hand it frames, which fast relays when it can (relay_fast.go): handle
// gets the rest, decoded. An error of handle or fast is a failed write to
// the side named to (a *writeFailed), unless it says otherwise or the
// relay's context ended.
func (r *Relay) pump(ctx context.Context, from mcp.Connection, to string, handle func(context.Context, jsonrpc.Message) error, fast func(context.Context, []byte) (bool, error)) error {
	lines, ok := from.(*lineConn)
	if !ok {
		for {
			msg, err := from.Read(ctx)
			if err != nil {
				return err
			}
			if err := handle(ctx, msg); err != nil {
				return failedTo(ctx, to, err)
			}
		}
	}
	for {
		frame, err := lines.readFrame(ctx)
		if err != nil {
			return err
		}
		if done, err := fast(ctx, frame); done || err != nil {
			if err != nil {
				return failedTo(ctx, to, err)
			}
			continue
		}
		msgs, err := lines.decodeFrame(frame)
		if err != nil {
			return err
		}
		for _, msg := range msgs {
			if err := handle(ctx, msg); err != nil {
				return failedTo(ctx, to, err)
			}
		}
	}
}

// failedTo is err, an error of relaying a message, as a failed write to
// side to, unless it names its side already or the relay's context ended.
func failedTo(ctx context.Context, to string, err error) error {
	if ctx.Err() != nil || errors.As(err, new(*writeFailed)) {
		return err
	}
	return &writeFailed{to: to, err: err}
}

// fromHost relays a message of the host's to the upstream.
func (r *Relay) fromHost(ctx context.Context, msg jsonrpc.Message) error {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if !m.IsCall() {
			if n := r.notificationFromHost(m); n != nil {
				return r.up.Write(ctx, n)
			}
			return nil
		}
		params := m.Params
		if m.Method == methodInitialize {
			rewritten, h, err := declareElicitation(m.Params)
			if err != nil {
				if err := r.host.Write(ctx, &jsonrpc.Response{ID: m.ID, Error: invalidParams(err.Error())}); err != nil {
					return &writeFailed{to: "host", err: err} // the host's own failure, not the upstream's
				}
				return nil
			}
			r.mu.Lock()
			r.client = h
			r.mu.Unlock()
			params = rewritten
		}
		params = withElicitationMeta(params)
		return r.up.Write(ctx, &jsonrpc.Request{ID: r.toUpstream.relay(m.ID, m.Method, params), Method: m.Method, Params: params})
	case *jsonrpc.Response:
		s, ok := r.toHost.answered(m.ID)
		if !ok {
			r.log.Debug("bridge: a response from the host to no request", zap.Any("id", m.ID.Raw()))
			return nil
		}
		return r.up.Write(ctx, &jsonrpc.Response{ID: s.orig, Result: m.Result, Error: m.Error})
	}
	return nil
}

// notificationFromHost is the host's notification as the upstream gets it
// (nil: none):
// a cancellation names the request by the id it was relayed under. The host
// cancelling the last tool call it has in flight withdraws the questions
// asked for it: a 2025 elicitation carries nothing that ties it to one
// call, so with several calls in flight they stay until the upstream
// cancels them or ends.
func (r *Relay) notificationFromHost(m *jsonrpc.Request) *jsonrpc.Request {
	if m.Method != methodCancelled {
		return m
	}
	id, rest, ok := cancelledID(m.Params)
	if !ok {
		return m
	}
	if r.stopFulfilling(id) {
		return nil // the upstream has nothing in flight for it
	}
	own, ok := r.toUpstream.relayedAs(id)
	if !ok {
		return m
	}
	if r.toUpstream.waiting(methodCallTool) == 1 {
		r.withdrawAll()
	}
	return &jsonrpc.Request{Method: m.Method, Params: withRequestID(rest, own)}
}

// fromUpstream relays a message of the upstream's to the host, or asks
// questiond.
func (r *Relay) fromUpstream(ctx context.Context, msg jsonrpc.Message) error {
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if !m.IsCall() {
			return r.notificationFromUpstream(ctx, m)
		}
		if m.Method == methodElicit && !r.hostAnswers() {
			r.ask(ctx, m)
			return nil
		}
		return r.host.Write(ctx, &jsonrpc.Request{ID: r.toHost.relay(m.ID, m.Method, nil), Method: m.Method, Params: m.Params})
	case *jsonrpc.Response:
		s, ok := r.toUpstream.answered(m.ID)
		if !ok {
			r.log.Debug("bridge: a response from the upstream to no request", zap.Any("id", m.ID.Raw()))
			return nil
		}
		if inputs, state, ok := r.inputsToAsk(s, m); ok {
			r.fulfil(ctx, s, inputs, state)
			return nil
		}
		if urls, ok := r.urlsRequired(s, m); ok {
			r.openURLs(ctx, s, urls, m.Error)
			return nil
		}
		r.settled(s)
		return r.host.Write(ctx, &jsonrpc.Response{ID: s.orig, Result: m.Result, Error: m.Error})
	}
	return nil
}

// settled forgets what the relay kept for the host's request s, now that
// its final response goes to the host.
func (r *Relay) settled(s sent) {
	if retriable[s.method] {
		r.forgetRounds(s.orig.Raw())
	}
	if s.token != nil {
		r.mu.Lock()
		delete(r.progress, string(s.token))
		r.mu.Unlock()
	}
}

// notificationFromUpstream relays the upstream's notification; a
// cancellation of an elicitation withdraws its question instead.
func (r *Relay) notificationFromUpstream(ctx context.Context, m *jsonrpc.Request) error {
	if m.Method == methodProgress {
		// Noted and sent under progressMu, so that a keep-alive cannot
		// come between and put a lower value after a higher one.
		r.progressMu.Lock()
		defer r.progressMu.Unlock()
		r.sawProgress(m.Params)
	}
	if m.Method == methodElicitationComplete && r.completed(ctx, m.Params) {
		return nil // its question was the relay's: the host never saw it
	}
	if m.Method == methodCancelled {
		if id, rest, ok := cancelledID(m.Params); ok {
			if r.withdraw(id) {
				return nil
			}
			if own, ok := r.toHost.relayedAs(id); ok {
				return r.host.Write(ctx, &jsonrpc.Request{Method: m.Method, Params: withRequestID(rest, own)})
			}
		}
	}
	return r.host.Write(ctx, m)
}

// hostAnswers says whether elicitations go to the host.
func (r *Relay) hostAnswers() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opts.PreferHost && r.client.elicits
}

// ask asks questiond for an elicitation/create and answers the upstream
// when the operator has, unless the question was withdrawn.
func (r *Relay) ask(ctx context.Context, m *jsonrpc.Request) {
	a, err := r.question(m.Params)
	if err != nil {
		r.respondUpstream(ctx, m.ID, nil, err)
		return
	}
	qctx, withdraw := context.WithCancel(ctx)
	key := m.ID.Raw()
	r.mu.Lock()
	r.asks[key] = pendingAsk{withdraw: withdraw, id: m.ID}
	if a.elicitationID != "" {
		r.urls[a.elicitationID] = urlAsk{key: key, id: m.ID}
	}
	r.mu.Unlock()
	r.asking.Go(func() {
		defer withdraw()
		res, err := r.opts.Asker.Elicit(qctx, a.params)
		r.mu.Lock()
		_, live := r.asks[key]
		delete(r.asks, key)
		if a.elicitationID != "" && r.urls[a.elicitationID].key == key {
			delete(r.urls, a.elicitationID)
		}
		r.mu.Unlock()
		if !live || qctx.Err() != nil {
			return // withdrawn: a cancelled request gets no response
		}
		result, err := r.answer(a, res, err)
		r.respondUpstream(ctx, m.ID, result, err)
	})
}

func (r *Relay) respondUpstream(ctx context.Context, id jsonrpc.ID, result json.RawMessage, err error) {
	if werr := r.up.Write(ctx, &jsonrpc.Response{ID: id, Result: result, Error: err}); werr != nil && ctx.Err() == nil {
		r.log.Warn("bridge: answering the upstream failed", zap.Error(werr))
	}
}

// withdraw withdraws the question asked for the upstream's request id, and
// reports whether there was one.
func (r *Relay) withdraw(id any) bool {
	r.mu.Lock()
	a, ok := r.asks[id]
	delete(r.asks, id)
	r.mu.Unlock()
	if ok {
		a.withdraw()
	}
	return ok
}

// withdrawAll withdraws every question asked for the upstream's
// elicitation/create requests.
func (r *Relay) withdrawAll() {
	r.mu.Lock()
	asks := r.asks
	r.asks = map[any]pendingAsk{}
	r.mu.Unlock()
	for _, a := range asks {
		a.withdraw()
	}
}

// cancelledID reads notifications/cancelled's requestId (normalised as
// jsonrpc ids are) and the params around it.
func cancelledID(params json.RawMessage) (any, map[string]json.RawMessage, bool) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil {
		return nil, nil, false
	}
	var raw any
	if json.Unmarshal(p["requestId"], &raw) != nil {
		return nil, nil, false
	}
	id, err := jsonrpc.MakeID(raw)
	if err != nil || !id.IsValid() {
		return nil, nil, false
	}
	return id.Raw(), p, true
}

func withRequestID(p map[string]json.RawMessage, id jsonrpc.ID) json.RawMessage {
	p["requestId"], _ = json.Marshal(id.Raw())
	out, _ := json.Marshal(p)
	return out
}

// pendingAsk is an upstream's elicitation/create being asked.
type pendingAsk struct {
	withdraw context.CancelFunc
	id       jsonrpc.ID // the upstream's request
}

// pendingAsks are the upstream's requests whose questions are being asked.
func (r *Relay) pendingAsks() []jsonrpc.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]jsonrpc.ID, 0, len(r.asks))
	for _, a := range r.asks {
		ids = append(ids, a.id)
	}
	return ids
}

// cancelUpstreamTimeout bounds answering the upstream as the relay ends.
const cancelUpstreamTimeout = 2 * time.Second

// cancelUpstream answers the upstream's requests ids with cancel.
func (r *Relay) cancelUpstream(ids []jsonrpc.ID) {
	if len(ids) == 0 {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), cancelUpstreamTimeout)
	defer stop()
	for _, id := range ids {
		if err := r.up.Write(ctx, &jsonrpc.Response{ID: id, Result: json.RawMessage(`{"action":"cancel"}`)}); err != nil {
			return
		}
	}
}
