package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/mcptasks"
	"github.com/questiond/questiond/internal/session"
)

// Endpoint serves /mcp: MCP over Streamable HTTP. Every MCP session gets
// its own MCP server, built when the session begins, with the one question
// tool its questiond session's capability allows then (or none). The tool
// list of a live session never changes; a later capability change is
// enforced when a tool is called (the service routes every question by its
// session's capability then).
type Endpoint struct {
	opts      Options
	questions *ask.Service
	meter     Meter
	log       *zap.Logger
	handler   http.Handler     // today's stateful MCP (protocols up to 2025-11-25)
	stateless http.Handler     // MCP 2026-07-28 (see statelessRequest)
	schemas   *mcp.SchemaCache // tool schemas are inferred once, not per session
	versions  *mcp.Server      // answers the SDK's protocol-version lookups
	input     *jsonschema.Schema
	output    *jsonschema.Schema
	tasks     *mcptasks.Tasks // the tasks extension of stateless requests

	mu       sync.Mutex
	servers  map[string]liveMCP // by Mcp-Session-Id: the servers of live sessions
	room     quota              // live sessions and those being begun, per agent (Limits.MaxSessions*)
	connects int                // connecting requests so far
	closed   bool

	streamMu sync.Mutex // guards streams only; never held with mu
	streams  quota      // open GET /mcp event streams, per agent (Limits.MaxStreams*)

	posts *ask.Door // POST requests in progress: their answers go out before Close
}

// mcpConnection is what an MCP session was bound to when it began.
type mcpConnection struct {
	sessionID  string             // the questiond session it asks for
	directory  string             // the project directory its questions are listed in ("": every)
	capability session.Capability // at connect time; decides the tool
	agent      string             // the agent that connected
	server     *mcp.Server        // built by serverFor, once
	settled    bool               // the room roomForSession took is its live session's or given back (guarded by mu)
	stateless  bool               // a 2026-07-28 request's, not a session's
	// beat, set for a stateless request, keeps its response stream alive
	// while a tool call waits without a progress token (a server may send
	// a stateless client no ping).
	beat func()
}

// liveMCP is the server of a live MCP session and the agent it counts for.
type liveMCP struct {
	server *mcp.Server
	agent  string
}

type mcpConnectingKey struct{}

// Tool names, by capability.
const (
	toolAskUser   = "ask_user_question"
	toolAskParent = "ask_parent_question"
)

// New returns the endpoint with opts.
func New(opts Options) *Endpoint {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Meter == nil {
		opts.Meter = noMeter{}
	}
	m := &Endpoint{
		opts:      opts,
		questions: opts.Questions,
		meter:     opts.Meter,
		log:       opts.Logger,
		schemas:   mcp.NewSchemaCache(),
		versions:  mcp.NewServer(&mcp.Implementation{Name: "questiond", Version: opts.Version}, nil),
		servers:   make(map[string]liveMCP),
		posts:     ask.NewDoor(),
	}
	m.input, m.output = askSchemas(opts.Elicit)
	m.tasks = mcptasks.New(mcptasks.Options{
		Questions: taskQuestions{opts.Questions},
		Result:    taskResult,
		Retention: opts.Retention,
	})
	var h http.Handler = mcp.NewStreamableHTTPHandler(m.serverFor, &mcp.StreamableHTTPOptions{
		SessionTimeout:               opts.IdleTimeout,
		MaxRequestBodyBytes:          opts.MaxBodyBytes,
		PropagateRequestCancellation: true,
		// The host guard in front of every route already refuses DNS
		// rebinding, with --allowed-hosts; the SDK's own check would refuse
		// those names behind a reverse proxy on loopback.
		DisableLocalhostProtection: true,
	})
	if opts.BindToAgents {
		// Bind each MCP session to the agent that opened it, so another
		// agent's token cannot use its session id. The token itself was
		// checked by the agents' guard already.
		h = auth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
			return &auth.TokenInfo{UserID: "agent:" + agentFrom(ctx)}, nil
		}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	}
	m.handler = h
	m.stateless = mcp.NewStreamableHTTPHandler(m.serverFor, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		MaxRequestBodyBytes: opts.MaxBodyBytes,
		// The call is the POST: a client that hangs up cancels its tool
		// call, which withdraws its question.
		PropagateRequestCancellation: true,
		DisableLocalhostProtection:   true, // as above
	})
	return m
}

// Serve serves r for agent, the caller the agents' guard admitted ("" for
// an anonymous agent, without agent tokens). It refuses what the SDK would
// answer in plain text (a bad session id, shutdown, too many streams) with
// questiond's JSON errors, and a body that is not JSON-RPC with a JSON-RPC
// error (see jsonrpc.go), and names the questiond session of a connecting
// request for serverFor.
func (m *Endpoint) Serve(w http.ResponseWriter, r *http.Request, agent string) {
	r = r.WithContext(context.WithValue(r.Context(), agentKey{}, agent))
	if r.Method == http.MethodPost {
		// Counted so a shutdown closes sessions only once the answers of
		// their tool calls have gone out (see Release).
		if !m.posts.Enter() {
			m.writeError(w, r, wire.ErrShuttingDown)
			return
		}
		defer m.posts.Leave()
	}
	if m.questions.Draining() {
		m.writeError(w, r, wire.ErrShuttingDown)
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Time{}) // tool calls wait for people
	var (
		post    *mcpPost
		refused *rpcRefusal
	)
	if r.Method == http.MethodPost {
		post, refused = checkMCPBody(r, m.opts.MaxBodyBytes)
	}
	if statelessRequest(r, post) {
		m.serveStateless(w, r, agent, post, refused)
		return
	}
	var onHeader func()
	var conn *mcpConnection // a connecting request's, holding room for its session
	switch {
	case r.Method == http.MethodGet:
		release, err := m.streamSlot(agent)
		if err != nil {
			m.writeError(w, r, err)
			return
		}
		defer release()
	case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "":
		var err error
		if conn, err = m.connecting(r, agent, false); err == nil {
			err = m.roomForSession(conn)
		}
		if err != nil {
			m.writeError(w, r, err)
			return
		}
		defer m.settle(conn) // even on a panic
		r = r.WithContext(context.WithValue(r.Context(), mcpConnectingKey{}, conn))
		onHeader = func() { m.connected(conn, w.Header().Get("Mcp-Session-Id")) }
	}
	if refused != nil {
		if conn != nil {
			m.settle(conn) // before the refusal goes out, as below
		}
		writeRPCRefusal(w, refused)
		return
	}
	sw := &sdkErrorWriter{ResponseWriter: w, onHeader: onHeader, post: post}
	m.handler.ServeHTTP(sw, r)
	if conn != nil {
		m.settle(conn) // before a refusal goes out: its client may try again at once
	}
	sw.finish(m, r)
	if r.Method == http.MethodDelete && sw.sent == http.StatusNoContent {
		m.ended(r.Header.Get("Mcp-Session-Id"))
	}
}

// connecting reads the questiond session a new MCP session (or a stateless
// request) asks for and the capability it has now. One that names none gets
// a session of its own when it is stateful, and its agent's inbox, where its
// HTTP questions without a session go too, when it is stateless: a stateless
// request is one call, and a session per call would scatter an agent's
// questions over as many sessions.
func (m *Endpoint) connecting(r *http.Request, agent string, stateless bool) (*mcpConnection, error) {
	sessionID, err := sessionParam(r)
	if err != nil {
		return nil, err
	}
	directory, err := wire.RequestDirectory(r)
	if err != nil {
		return nil, err
	}
	switch {
	case sessionID == "" && stateless:
		sessionID = ask.Inbox(agent)
	case sessionID == "":
		sessionID = ident.Descending(ident.Session)
	}
	rec, err := m.questions.Sessions().Get(r.Context(), sessionID)
	if err != nil {
		return nil, wire.SessionError(err, sessionID)
	}
	return &mcpConnection{sessionID: sessionID, directory: directory, capability: rec.Capability, agent: agent}, nil
}

// serverFor is the SDK's getServer: the server of the session a connecting
// request begins (built once, though the SDK asks twice), and a stand-in
// for requests to existing sessions, which the SDK asks only for protocol
// versions.
func (m *Endpoint) serverFor(r *http.Request) *mcp.Server {
	conn, _ := r.Context().Value(mcpConnectingKey{}).(*mcpConnection)
	if conn == nil {
		return m.versions
	}
	if conn.server == nil {
		conn.server = m.newServer(conn)
	}
	return conn.server
}

// connected keeps the server of a connecting request once it holds a
// session (a request that began none — a failed initialize, a probe of a
// protocol version questiond does not speak — leaves nothing behind), or
// closes that session if Close came first. It runs as the answer's header
// goes out, so the session counts before its client can open another. Every sweepEvery connections it
// also forgets the servers whose sessions have ended meanwhile (an idle
// timeout), so the map stays as small as the live sessions without a scan on
// every connection.
func (m *Endpoint) connected(conn *mcpConnection, mcpSessionID string) {
	live := conn.server != nil && mcpSessionID != "" && hasSessions(conn.server)
	m.mu.Lock()
	closed := m.closed
	if !live || closed {
		// Room is given back before the answer goes out, so the client's
		// next request (an initialize after a protocol-version probe) finds
		// it free.
		m.settleLocked(conn)
		m.mu.Unlock()
		if live {
			closeSessions(conn.server)
		}
		return
	}
	if old, ok := m.servers[mcpSessionID]; ok {
		m.room.give(old.agent) // the SDK does not reuse ids; never count one twice
	}
	m.servers[mcpSessionID] = liveMCP{conn.server, conn.agent}
	conn.settled = true // the room roomForSession took is now this session's
	if m.connects++; m.connects%sweepEvery == 0 {
		m.sweep()
	}
	m.mu.Unlock()
}

// ended forgets the server of a session its client closed (DELETE /mcp) at
// once: the SDK finishes closing it in the background, and its room must be
// free for the client's next session.
func (m *Endpoint) ended(mcpSessionID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forget(mcpSessionID)
}

// forget drops the server of a session and gives its room back. Call it
// with mu held.
func (m *Endpoint) forget(mcpSessionID string) {
	if live, ok := m.servers[mcpSessionID]; ok {
		delete(m.servers, mcpSessionID)
		m.room.give(live.agent)
	}
}

// sweep forgets the servers whose sessions have ended. Call it with mu held.
func (m *Endpoint) sweep() {
	for id, live := range m.servers {
		if !hasSessions(live.server) {
			m.forget(id)
		}
	}
}

const sweepEvery = 64

// roomForSession takes room for the new MCP session conn begins, or
// refuses it when Limits.MaxSessions are live or being begun, or its agent's
// Limits.MaxSessionsPerAgent: each holds a server and goroutines until it ends
// or idles out. Sessions being begun count, so that concurrent initialize
// calls cannot overshoot; settle gives the room back unless the session
// became live.
func (m *Endpoint) roomForSession(conn *mcpConnection) error {
	lim := m.opts.Limits
	m.mu.Lock()
	defer m.mu.Unlock()
	full := m.room.fits(conn.agent, lim.MaxSessions, lim.MaxSessionsPerAgent)
	if full != quotaFits {
		m.sweep() // sessions that idled out meanwhile make room
		full = m.room.fits(conn.agent, lim.MaxSessions, lim.MaxSessionsPerAgent)
	}
	switch full {
	case quotaTotal:
		m.meter.Refused(LimitSessions)
		return wire.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable",
			fmt.Sprintf("questiond already serves %d MCP sessions, its limit (--max-mcp-sessions); close unused sessions (DELETE /mcp) or try again later", lim.MaxSessions))
	case quotaAgent:
		m.meter.Refused(LimitSessionsPerAgent)
		return wire.TooMany(fmt.Sprintf("agent %q already has %d live MCP sessions, its limit (--max-mcp-sessions-per-agent); close unused sessions (DELETE /mcp) or wait for them to idle out (--mcp-idle-timeout)",
			conn.agent, lim.MaxSessionsPerAgent))
	}
	m.room.take(conn.agent)
	return nil
}

// settle gives back the room roomForSession took for conn unless a live
// session holds it or it was given back already (a failed initialize, a
// refusal, a shutdown).
func (m *Endpoint) settle(conn *mcpConnection) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settleLocked(conn)
}

func (m *Endpoint) settleLocked(conn *mcpConnection) {
	if !conn.settled {
		conn.settled = true
		m.room.give(conn.agent)
	}
}

// streamSlot takes one of the agents' MCP event-stream slots (GET /mcp)
// for agent, or refuses it beyond Limits.MaxStreams in total or
// Limits.MaxStreamsPerAgent of agent; release gives it back. These slots are
// not the operators' (httpapi's streamSlot).
func (m *Endpoint) streamSlot(agent string) (release func(), err error) {
	lim := m.opts.Limits
	m.streamMu.Lock()
	defer m.streamMu.Unlock()
	switch m.streams.fits(agent, lim.MaxStreams, lim.MaxStreamsPerAgent) {
	case quotaTotal:
		m.meter.Refused(LimitStreams)
		return nil, wire.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable",
			fmt.Sprintf("questiond already serves %d MCP event streams, its limit (--max-mcp-streams); try again later", lim.MaxStreams))
	case quotaAgent:
		m.meter.Refused(LimitStreamsPerAgent)
		return nil, wire.TooMany(fmt.Sprintf("agent %q already has %d MCP event streams open, its limit (--max-mcp-streams-per-agent); close one first",
			agent, lim.MaxStreamsPerAgent))
	}
	m.streams.take(agent)
	return func() {
		m.streamMu.Lock()
		defer m.streamMu.Unlock()
		m.streams.give(agent)
	}, nil
}

// Sessions counts the live MCP sessions, for metrics: it walks the servers
// kept, so call it at scrape time, not per request.
func (m *Endpoint) Sessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, live := range m.servers {
		for range live.server.Sessions() {
			n++
		}
	}
	return n
}

func hasSessions(server *mcp.Server) bool {
	for range server.Sessions() {
		return true
	}
	return false
}

// Close ends every MCP session (their waiting tool calls withdraw their
// questions) and refuses new ones.
func (m *Endpoint) Close() {
	m.mu.Lock()
	m.closed = true
	servers := slices.Collect(maps.Values(m.servers))
	for id := range m.servers {
		m.forget(id)
	}
	m.mu.Unlock()
	for _, live := range servers {
		closeSessions(live.server)
	}
}

func closeSessions(server *mcp.Server) {
	for ss := range server.Sessions() {
		_ = ss.Close()
	}
}

// newServer builds the MCP server of one session: the question tool of its
// capability, or no tool at all.
func (m *Endpoint) newServer(conn *mcpConnection) *mcp.Server {
	opts := &mcp.ServerOptions{HasTools: true, SchemaCache: m.schemas, Capabilities: &mcp.ServerCapabilities{
		Logging: &mcp.LoggingCapabilities{},
		// A session's tool is fixed when it connects: its list never changes,
		// so questiond does not offer list_changed notifications.
		Tools: &mcp.ToolCapabilities{},
	}}
	switch conn.capability {
	case session.User:
		opts.Instructions = "Use " + toolAskUser + " when you need a decision or information only the user has; it waits for the answer."
	case session.Parent:
		opts.Instructions = "Use " + toolAskParent + " when you need a decision you cannot make yourself; the question goes to your parent session and the call waits for the answer."
	default:
		opts.Instructions = "Nobody can be asked questions in this session: continue with your best judgment."
	}
	if conn.stateless {
		// The tasks extension is served to 2026-07-28 requests only: a
		// task outlives its request, which only they expect.
		opts.Capabilities.Extensions = mcptasks.Capability()
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "questiond", Version: m.opts.Version}, opts)
	if conn.stateless {
		server.AddReceivingMiddleware(offeredOnly, m.tasks.Calls)
		m.tasks.Serve(server, conn.agent)
	}
	switch conn.capability {
	case session.User:
		mcp.AddTool(server, &mcp.Tool{Name: toolAskUser, Title: "Ask the user", Description: askUserDescription,
			InputSchema: m.input, OutputSchema: m.output},
			m.askTool(conn, session.User))
	case session.Parent:
		mcp.AddTool(server, &mcp.Tool{Name: toolAskParent, Title: "Ask the parent session", Description: askParentDescription,
			InputSchema: m.input, OutputSchema: m.output},
			m.askTool(conn, session.Parent))
	}
	return server
}
