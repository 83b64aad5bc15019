package connguard

import "sync/atomic"

// Reasons a Guard refuses or closes a connection, or ends a request, as
// Stats counts them: a small fixed set, fit for metric labels.
const (
	// ReasonRefused: a new connection refused at once (a minimal 503),
	// every connection being answered at MaxConns.
	ReasonRefused = "refused"
	// ReasonClosedPerAddr: a connection not yet authenticated closed to make
	// room for another of its address (MaxConnsPerAddr).
	ReasonClosedPerAddr = "closed_per_address"
	// ReasonClosedMaxConns: a connection closed to make room for a new one
	// at MaxConns.
	ReasonClosedMaxConns = "closed_max_connections"
	// ReasonClosedPerAgent: an agent's idle connection closed to make room
	// for a request of the same agent on another, at MaxConnsPerAgent or at
	// the agents' share of MaxConns.
	ReasonClosedPerAgent = "closed_per_agent"
	// ReasonAgentCap: a request refused (503) because its agent holds
	// MaxConnsPerAgent connections, none of them idle.
	ReasonAgentCap = "agent_cap"
	// ReasonAgentsCap: a request refused (503) because agents together hold
	// MaxConns less OperatorReserve connections.
	ReasonAgentsCap = "agents_cap"
	// ReasonBodyReadTimeout: a request whose body did not arrive within
	// BodyReadTimeout (408 where an answer could still be written).
	ReasonBodyReadTimeout = "body_read_timeout"
)

// Reasons lists every reason Stats counts, in a fixed order.
var Reasons = []string{ReasonRefused, ReasonClosedPerAddr, ReasonClosedMaxConns, ReasonClosedPerAgent,
	ReasonAgentCap, ReasonAgentsCap, ReasonBodyReadTimeout}

// Stats counts, since start, what a Guard refused or closed, by reason (one
// of Reasons). The log says so at most once a minute; metrics read these.
type Stats map[string]uint64

// counts are a Guard's running totals: atomics, read at scrape time.
type counts struct {
	refused, closedPerAddr, closedMaxConns, closedPerAgent, agentCap, agentsCap, bodyTimeout atomic.Uint64
}

// Stats returns what g has refused or closed since it started.
func (g *Guard) Stats() Stats {
	c := &g.counts
	return Stats{
		ReasonRefused:         c.refused.Load(),
		ReasonClosedPerAddr:   c.closedPerAddr.Load(),
		ReasonClosedMaxConns:  c.closedMaxConns.Load(),
		ReasonClosedPerAgent:  c.closedPerAgent.Load(),
		ReasonAgentCap:        c.agentCap.Load(),
		ReasonAgentsCap:       c.agentsCap.Load(),
		ReasonBodyReadTimeout: c.bodyTimeout.Load(),
	}
}
