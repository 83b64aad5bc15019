package mcpserver

import (
	"context"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi/wire"
)

// Options configure an Endpoint; httpapi fills them from its own.
type Options struct {
	Questions *ask.Service
	Logger    *zap.Logger // the HTTP routes'
	Version   string      // the MCP server's, as initialize reports it
	// Elicit tunes how the tools' questions become elicitations.
	Elicit elicit.Options
	// DefaultTimeout ends a tool's question that got no answer.
	DefaultTimeout time.Duration
	// Retention is how long the store keeps an ended question readable
	// (pending.Options.Retention): a task's result stays readable that
	// long. Zero: pending.DefaultRetention.
	Retention time.Duration
	// KeepAlive is how often a waiting tool call sends progress (or a ping).
	KeepAlive time.Duration
	// IdleTimeout closes a session that got no request for this long.
	IdleTimeout  time.Duration
	MaxBodyBytes int64
	Limits       Limits
	// BindToAgents binds each MCP session to the agent that opened it
	// (agents have tokens), so another agent cannot use its session id.
	BindToAgents bool
	// Meter hears of tool calls and of limit refusals; nil: nobody does.
	Meter Meter
}

// Limits bound the MCP sessions and event streams, in total and per agent.
// Zero means no limit.
type Limits struct {
	MaxStreams          int // open GET /mcp event streams (503 beyond)
	MaxStreamsPerAgent  int // of one agent token (429 beyond)
	MaxSessions         int // live MCP sessions (503 beyond)
	MaxSessionsPerAgent int // of one agent token (429 beyond)
}

// Meter hears what the endpoint does, for metrics; its methods must not
// block. httpapi.Meter is one.
type Meter interface {
	// ToolCall counts a question tool call that returned: the tool's name
	// and "accept", "decline", "cancel" or "error".
	ToolCall(tool, result string)
	// Refused counts a request refused by one of the Limits, by its Limit*
	// name.
	Refused(limit string)
}

// Names of the limits a Meter hears refusals of.
const (
	LimitStreams          = "mcp_streams"            // Limits.MaxStreams
	LimitStreamsPerAgent  = "mcp_streams_per_agent"  // Limits.MaxStreamsPerAgent
	LimitSessions         = "mcp_sessions"           // Limits.MaxSessions
	LimitSessionsPerAgent = "mcp_sessions_per_agent" // Limits.MaxSessionsPerAgent
)

type noMeter struct{}

func (noMeter) ToolCall(string, string) {}
func (noMeter) Refused(string)          {}

// answerGrace bounds how long Release waits for the answers of MCP
// requests to go out before it closes their sessions.
const answerGrace = time.Second

// Release is the endpoint's shutdown step (ask.AfterCalls): tool calls have
// seen the release and withdrawn their questions; their sessions close once
// the calls' answers (an error naming the question) have gone out, or after
// answerGrace for a client that does not read.
func (m *Endpoint) Release(ctx context.Context) {
	answered, cancel := context.WithTimeout(ctx, answerGrace)
	_ = m.posts.CloseAndWait(answered)
	cancel()
	m.Close()
}

// agentKey carries the agent of a request to the SDK's token check.
type agentKey struct{}

func agentFrom(ctx context.Context) string {
	agent, _ := ctx.Value(agentKey{}).(string)
	return agent
}

func (m *Endpoint) writeError(w http.ResponseWriter, r *http.Request, err error) {
	wire.WriteError(m.log, w, r, err)
}
