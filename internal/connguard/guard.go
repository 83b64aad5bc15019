// Package connguard bounds what slow and numerous clients can hold of
// questiond's HTTP server, without ever locking the operators out:
//
//   - a read deadline for request bodies (Options.BodyReadTimeout): a body
//     that has not fully arrived in time ends its request (408 where an
//     answer can still be written) and its connection. The deadline is armed
//     only while a body is being received and cleared once it is in, so event
//     streams, long-polls and POST /elicit's long wait are not cut;
//   - an answer given before the body was read (401, 413, 415, 429, …)
//     closes the connection ("Connection: close") instead of waiting for the
//     rest of the body;
//   - caps on open connections. Loopback callers, and everyone behind a load
//     balancer, share one address, so the per-address cap counts only
//     connections that have not yet made an authenticated request. Once a
//     request authenticates (Admit), its connection counts for its caller:
//     one agent's connections are capped per agent, all agents' together
//     leave Options.OperatorReserve of MaxConns to operators. When a cap is
//     reached, room is made by closing the oldest connection that is not
//     being answered (idle, or silent or still sending its request for a
//     second) of the same address or agent, or anywhere for MaxConns; a
//     new connection for which there is no room is refused at once (a
//     minimal 503, then closed), never left waiting;
//   - Shutdown: CloseAll closes, at once, every connection that is not
//     being answered, so a half-sent request cannot hold a shutdown.
//
// Wire a Guard into an http.Server with Listener, ConnState, ConnContext
// and Handler (see the daemon package).
package connguard

import (
	"container/list"
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/defaults"
)

// Defaults for Options.
const (
	// DefaultBodyReadTimeout is how long a request body may take to arrive.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultMaxConns bounds open connections. New lowers any cap to fit
	// the process's open-file limit (less fdHeadroom).
	DefaultMaxConns = 4096
	// DefaultMaxConnsPerAddr bounds one address's connections that have not
	// made an authenticated request yet.
	DefaultMaxConnsPerAddr = 256
	// DefaultMaxConnsPerAgent bounds the connections of one agent token.
	DefaultMaxConnsPerAgent = 1024
	// DefaultOperatorReserve is how many of MaxConns agents can never take.
	DefaultOperatorReserve = 64
)

// fdHeadroom is the file descriptors left to everything but connections
// (the listener, the database, webhooks, logs) when MaxConns is lowered to
// fit the open-file limit.
const fdHeadroom = 128

// sendGrace is how long a connection may be silent, or sending its request,
// before it can be closed to make room for another: an honest client sends
// its request in milliseconds.
const sendGrace = time.Second

// Options configure a Guard. Zero values mean the defaults.
type Options struct {
	BodyReadTimeout  time.Duration
	MaxConns         int
	MaxConnsPerAddr  int
	MaxConnsPerAgent int
	// OperatorReserve is the part of MaxConns that only connections of
	// operators (or callers that have not authenticated yet) may use.
	// Negative means none.
	OperatorReserve int
	// TLS says connections are TLS: a refused one is closed without the
	// plain-text 503 it would get otherwise.
	TLS    bool
	Logger *zap.Logger
}

// Caller is who a request on a connection authenticated as.
type Caller struct {
	Operator bool
	// Agent is the agent's token name; "" with Operator false is an agent
	// on a server without agent tokens (all such agents share no per-agent
	// cap: they cannot be told apart).
	Agent string
}

// pool is whom a connection counts for.
type pool int

const (
	poolPending  pool = iota // no authenticated request yet
	poolAgent                // an agent's (conn.agent names it)
	poolOperator             // an operator's; last: closed for room only when no other will do
)

// conn is an accepted connection the Guard keeps count of.
type conn struct {
	net.Conn
	g    *Guard
	addr string // the remote IP

	// Guarded by g.mu.
	all, byAddr *list.Element // places in g.all and g.pending[addr] (nil once out)
	pool        pool
	agent       string
	state       http.ConnState
	since       time.Time // of the last change of state
	answering   bool      // a request is in and its whole body has arrived
	gone        bool
}

// Close forgets the connection at once (a hijacked event stream's too),
// then closes it.
func (c *conn) Close() error {
	c.g.forget(c)
	return c.Conn.Close()
}

// CloseWrite keeps TCP half-close, which net/http uses so a client reads an
// answer before the connection is reset.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// NetConn is the connection underneath.
func (c *conn) NetConn() net.Conn { return c.Conn }

// stale: closable for room, having had its chance: idle between requests,
// or silent or still sending its request for sendGrace.
func (c *conn) stale(now time.Time) bool {
	return c.evictable() && (c.state == http.StateIdle || now.Sub(c.since) >= sendGrace)
}

// evictable: nothing is being answered on it, so closing it loses nobody an
// answer: silent, idle, or still sending its request.
func (c *conn) evictable() bool {
	switch c.state {
	case http.StateNew, http.StateIdle:
		return true
	case http.StateActive:
		return !c.answering
	}
	return false
}

// Guard keeps count of a server's connections; see the package comment.
type Guard struct {
	opts Options
	log  *zap.Logger

	mu         sync.Mutex
	all        *list.List            // every connection, oldest first
	pending    map[string]*list.List // per address, connections not yet authenticated
	operators  int
	agents     map[string]int
	agentTotal int
	closing    bool // CloseAll was called
	refused    int  // connections refused or closed for room since the last log line
	loggedAt   time.Time

	counts counts // for Stats, outside mu
}

// New returns a Guard, with MaxConns lowered to fit the open-file limit.
func New(opts Options) (*Guard, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	defaults.Fill(&opts.BodyReadTimeout, DefaultBodyReadTimeout)
	defaults.Fill(&opts.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
	defaults.Fill(&opts.MaxConnsPerAgent, DefaultMaxConnsPerAgent)
	if opts.OperatorReserve == 0 {
		opts.OperatorReserve = DefaultOperatorReserve
	}
	if opts.OperatorReserve < 0 {
		opts.OperatorReserve = 0
	}
	defaults.Fill(&opts.MaxConns, DefaultMaxConns)
	// More connections than file descriptors would fail accept(2) for
	// everyone, operators included.
	if files, ok := openFileLimit(); ok && files-fdHeadroom < opts.MaxConns {
		opts.MaxConns = max(files-fdHeadroom, 16)
		opts.OperatorReserve = min(opts.OperatorReserve, opts.MaxConns/4)
		opts.Logger.Warn("connection cap lowered to fit the open-file limit",
			zap.Int("max_connections", opts.MaxConns), zap.Int("open_file_limit", files))
	}
	if opts.OperatorReserve >= opts.MaxConns {
		return nil, fmt.Errorf("the operators' reserve of connections (%d) leaves agents none of the %d allowed", opts.OperatorReserve, opts.MaxConns)
	}
	return &Guard{opts: opts, log: opts.Logger, all: list.New(), pending: map[string]*list.List{}, agents: map[string]int{}}, nil
}

// MaxConns is the connection cap in force.
func (g *Guard) MaxConns() int { return g.opts.MaxConns }

// Listener wraps ln: connections beyond the caps are refused as they are
// accepted. Wrap the plain TCP listener, under any TLS.
func (g *Guard) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, g: g} }

type listener struct {
	net.Listener
	g *Guard
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if c := l.g.admit(nc); c != nil {
			return c, nil
		}
	}
}

// admit counts a new connection, making room for it if a cap is reached, or
// refuses it (nil). For MaxConnsPerAddr only stale connections are closed:
// a new one gets sendGrace to send its request, so a burst of honest
// clients from one address is not cut down by its own later members (it
// may pass the cap for that long). MaxConns it may not pass: there the
// oldest connection not being answered goes, stale ones first.
func (g *Guard) admit(nc net.Conn) *conn {
	addr := remoteIP(nc)
	now := time.Now()
	g.mu.Lock()
	var victims []*conn
	room := !g.closing
	perAddr := 0 // victims[:perAddr] make room under MaxConnsPerAddr, the rest under MaxConns
	if room && g.pendingOf(addr) >= g.opts.MaxConnsPerAddr {
		if victim := g.oldest(g.pending[addr], now, func(*conn) bool { return true }); victim != nil {
			victims = append(victims, victim)
			perAddr = 1
		}
	}
	if room && g.all.Len()-len(victims) >= g.opts.MaxConns {
		victim := g.roomAnywhere(now, victims)
		room = victim != nil
		victims = append(victims, victim)
	}
	var c *conn
	if room {
		for _, v := range victims {
			g.forgetLocked(v)
		}
		g.counts.closedPerAddr.Add(uint64(perAddr))
		g.counts.closedMaxConns.Add(uint64(len(victims) - perAddr))
		c = &conn{Conn: nc, g: g, addr: addr, state: http.StateNew, since: now}
		c.all = g.all.PushBack(c)
		if g.pending[addr] == nil {
			g.pending[addr] = list.New()
		}
		c.byAddr = g.pending[addr].PushBack(c)
		g.noteRefusalsLocked(len(victims))
	} else {
		victims = nil
		g.noteRefusalsLocked(1)
		if !g.closing {
			g.counts.refused.Add(1)
		}
	}
	closing := g.closing
	g.mu.Unlock()
	for _, v := range victims {
		_ = v.Conn.Close()
	}
	switch {
	case c != nil:
	case closing:
		_ = nc.Close()
	default:
		g.refuse(nc)
	}
	return c
}

// roomAnywhere picks the connection to close when MaxConns is reached: the
// oldest stale one, not yet authenticated first, then an agent's, then an
// operator's; failing that the oldest not being answered however young, in
// the same order (a flood of new connections, or of bodies that never come,
// must not keep an operator's out); nil when every connection is being
// answered.
func (g *Guard) roomAnywhere(now time.Time, skip []*conn) *conn {
	var best [2][3]*conn // [young][pool]
	for e := g.all.Front(); e != nil; e = e.Next() {
		c := e.Value.(*conn)
		if !c.evictable() || contains(skip, c) {
			continue
		}
		young := 0
		if !c.stale(now) {
			young = 1
		}
		if young == 0 && c.pool == poolPending {
			return c
		}
		if best[young][c.pool] == nil {
			best[young][c.pool] = c
		}
	}
	for _, byPool := range best {
		for _, c := range byPool {
			if c != nil {
				return c
			}
		}
	}
	return nil
}

// oldest is the first stale connection of l that ok accepts.
func (g *Guard) oldest(l *list.List, now time.Time, ok func(*conn) bool) *conn {
	if l == nil {
		return nil
	}
	for e := l.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*conn); c.stale(now) && ok(c) {
			return c
		}
	}
	return nil
}

func (g *Guard) pendingOf(addr string) int {
	if l := g.pending[addr]; l != nil {
		return l.Len()
	}
	return 0
}

// refusal is the whole answer a refused connection gets.
var refusal = func() string {
	body := `{"name":"ServiceUnavailable","data":{"message":"questiond has too many open connections (` + FlagMaxConns + `); retry in a moment"}}`
	return fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
}()

// refuse answers a connection there is no room for, without waiting for it.
func (g *Guard) refuse(nc net.Conn) {
	if !g.opts.TLS {
		_ = nc.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
		_, _ = nc.Write([]byte(refusal))
	}
	_ = nc.Close()
}

// noteRefusalsLocked logs refused and closed connections, at most once a
// minute.
func (g *Guard) noteRefusalsLocked(n int) {
	if n == 0 {
		return
	}
	g.refused += n
	if now := time.Now(); now.Sub(g.loggedAt) >= time.Minute {
		g.log.Warn("connections refused or closed: a connection cap was reached",
			zap.Int("count", g.refused), zap.Int("open", g.all.Len()), zap.Int("max_connections", g.opts.MaxConns))
		g.refused, g.loggedAt = 0, now
	}
}

// ConnState is the http.Server's ConnState hook.
func (g *Guard) ConnState(nc net.Conn, state http.ConnState) {
	c := unwrap(nc)
	if c == nil {
		return
	}
	if state == http.StateClosed {
		g.forget(c)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.gone {
		return
	}
	c.state, c.answering, c.since = state, false, time.Now()
	if g.closing && state != http.StateActive && c.evictable() {
		// A connection between requests during a shutdown gets no more.
		g.forgetLocked(c)
		_ = c.Conn.Close()
	}
}

type connKey struct{}

// ConnContext is the http.Server's ConnContext hook: it lets Handler and
// Admit find a request's connection.
func (g *Guard) ConnContext(ctx context.Context, nc net.Conn) context.Context {
	if c := unwrap(nc); c != nil {
		return context.WithValue(ctx, connKey{}, c)
	}
	return ctx
}

func connFrom(ctx context.Context) *conn {
	c, _ := ctx.Value(connKey{}).(*conn)
	return c
}

// unwrap finds the Guard's connection under a TLS one.
func unwrap(nc net.Conn) *conn {
	for nc != nil {
		if c, ok := nc.(*conn); ok {
			return c
		}
		inner, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		nc = inner.NetConn()
	}
	return nil
}

// CapError is a request refused because its caller has as many connections
// as it may; its message names the flag.
type CapError struct{ Message string }

func (e *CapError) Error() string { return e.Message }

// Flags the messages name; cmd/questiond defines them.
const (
	FlagMaxConns         = "--max-connections"
	FlagMaxConnsPerAddr  = "--max-connections-per-address"
	FlagMaxConnsPerAgent = "--max-connections-per-agent"
	FlagOperatorReserve  = "--operator-reserved-connections"
	FlagBodyReadTimeout  = "--body-read-timeout"
)

// Admit counts the connection of ctx's request for who; the auth
// middleware calls it once the request's credentials are checked. An
// operator is always admitted; an agent at its cap, or agents together at
// MaxConns less the operators' reserve, get a *CapError (answer 503 and
// close the connection) unless closing one of the agent's own idle
// connections makes room. A request not served through a Guard is admitted.
func Admit(ctx context.Context, who Caller) error {
	c := connFrom(ctx)
	if c == nil {
		return nil
	}
	return c.g.admitCaller(c, who)
}

func (g *Guard) admitCaller(c *conn, who Caller) error {
	g.mu.Lock()
	var victim *conn
	defer func() {
		g.mu.Unlock()
		if victim != nil {
			_ = victim.Conn.Close()
		}
	}()
	if c.gone || (who.Operator && c.pool == poolOperator) || (!who.Operator && c.pool == poolAgent && c.agent == who.Agent) {
		return nil
	}
	if !who.Operator {
		full, reason := "", &g.counts.agentsCap
		switch {
		case g.agentTotal >= g.opts.MaxConns-g.opts.OperatorReserve:
			full = fmt.Sprintf("agents have %d open connections, all that %s less %s (%d) leaves them",
				g.agentTotal, FlagMaxConns, FlagOperatorReserve, g.opts.MaxConns-g.opts.OperatorReserve)
		case who.Agent != "" && g.agents[who.Agent] >= g.opts.MaxConnsPerAgent:
			reason = &g.counts.agentCap
			full = fmt.Sprintf("agent %q has %d open connections, the most %s allows; reuse them (keep-alive) or close some",
				who.Agent, g.agents[who.Agent], FlagMaxConnsPerAgent)
		}
		if full != "" {
			victim = g.oldest(g.all, time.Now(), func(o *conn) bool {
				return o != c && o.pool == poolAgent && o.agent == who.Agent
			})
			if victim == nil {
				g.noteRefusalsLocked(1)
				reason.Add(1)
				return &CapError{Message: full}
			}
			g.forgetLocked(victim)
			g.counts.closedPerAgent.Add(1)
		}
	}
	g.leavePoolLocked(c)
	if who.Operator {
		c.pool = poolOperator
		g.operators++
	} else {
		c.pool, c.agent = poolAgent, who.Agent
		g.agents[who.Agent]++
		g.agentTotal++
	}
	return nil
}

// leavePoolLocked takes c out of the counts of the pool it is in.
func (g *Guard) leavePoolLocked(c *conn) {
	switch c.pool {
	case poolPending:
		if l := g.pending[c.addr]; l != nil && c.byAddr != nil {
			l.Remove(c.byAddr)
			if l.Len() == 0 {
				delete(g.pending, c.addr)
			}
		}
		c.byAddr = nil
	case poolOperator:
		g.operators--
	case poolAgent:
		if g.agents[c.agent]--; g.agents[c.agent] == 0 {
			delete(g.agents, c.agent)
		}
		g.agentTotal--
	}
}

func (g *Guard) forget(c *conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgetLocked(c)
}

func (g *Guard) forgetLocked(c *conn) {
	if c.gone {
		return
	}
	c.gone = true
	g.leavePoolLocked(c)
	g.all.Remove(c.all)
}

// answering marks c's request as whole: from now on closing c would lose
// an answer.
func (g *Guard) setAnswering(c *conn) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.state == http.StateActive {
		c.answering = true
	}
}

// CloseAll closes every connection that is not being answered (silent,
// idle, or still sending its request), now and from now on, for a
// shutdown: nobody is waiting for an answer on them, and a stopping server
// would answer none.
func (g *Guard) CloseAll() {
	g.mu.Lock()
	g.closing = true
	var victims []*conn
	for e := g.all.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*conn); c.evictable() {
			victims = append(victims, c)
		}
	}
	for _, c := range victims {
		g.forgetLocked(c)
	}
	g.mu.Unlock()
	for _, c := range victims {
		_ = c.Conn.Close()
	}
}

// Open counts the connections open now, for tests and metrics.
func (g *Guard) Open() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.all.Len()
}

func remoteIP(nc net.Conn) string {
	addr := nc.RemoteAddr()
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

func contains(cs []*conn, c *conn) bool {
	for _, o := range cs {
		if o == c {
			return true
		}
	}
	return false
}
