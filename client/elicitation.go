package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"
)

// Params are an elicitation: MCP's elicitation/create params (form mode)
// plus questiond's routing fields.
type Params struct {
	Message         string
	RequestedSchema json.RawMessage // e.g. from (*SchemaBuilder).Build
	SessionID       string          // "ses_…", optional: the OpenCode session the question belongs to; "" is the agent's inbox
	Title           string          // optional: the session's title for operators (default: the agent and the message)
	Directory       string          // optional: the project directory the question is listed in
	Timeout         time.Duration   // 0: the server's default; when it runs out the result is cancel
	Tool            *Tool           // optional: the assistant message and tool call that asked
	MCPTool         *MCPTool        // optional: the MCP tool call that was waiting when a bridged server asked
	Meta            map[string]any  // MCP _meta, optional
}

// Tool names the assistant message and tool call that asked, as OpenCode
// clients show it.
type Tool struct{ MessageID, CallID string }

// MCPTool names the MCP tool whose call was waiting when an MCP server
// asked through `questiond bridge`: Server is the name the host knows the
// server by (the bridge's --name), Name the tool's name on that server.
type MCPTool struct {
	Server string `json:"server"`
	Name   string `json:"name"`
}

// Elicitation is the agent's view of a question (POST, GET and DELETE
// /elicitations).
type Elicitation struct {
	ID, Status, SessionID, Directory, Ending string
	// AskingSessionID is the session that asked when its capability is
	// "parent": SessionID is then the parent's, where operators see it.
	AskingSessionID string
	Tool            *Tool    // as given when it was created
	MCPTool         *MCPTool // as given when it was created
	CreatedAt       time.Time
	Deadline        *time.Time
	Result          *Result // set once Status is "resolved"
}

// Statuses of an Elicitation.
const (
	StatusPending  = "pending"
	StatusResolved = "resolved"
)

// Actions of a Result, as MCP names them.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// createBody is the JSON body of POST /elicitations.
type createBody struct {
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	Meta            map[string]any  `json:"_meta,omitempty"`
	SessionID       string          `json:"sessionID,omitempty"`
	Title           string          `json:"title,omitempty"`
	Directory       string          `json:"directory,omitempty"`
	Timeout         string          `json:"timeout,omitempty"`
	Tool            *wireTool       `json:"tool,omitempty"`
	MCPTool         *MCPTool        `json:"mcpTool,omitempty"`
}

type wireTool struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

func newCreateBody(p Params) createBody {
	b := createBody{
		Message:         p.Message,
		RequestedSchema: p.RequestedSchema,
		Meta:            p.Meta,
		SessionID:       p.SessionID,
		Title:           p.Title,
		Directory:       p.Directory,
		MCPTool:         p.MCPTool,
	}
	if p.Timeout != 0 {
		b.Timeout = p.Timeout.String()
	}
	if p.Tool != nil {
		b.Tool = &wireTool{MessageID: p.Tool.MessageID, CallID: p.Tool.CallID}
	}
	return b
}

// wireElicitation is questiond's Elicitation JSON.
type wireElicitation struct {
	ID        string     `json:"id"`
	Status    string     `json:"status"`
	SessionID string     `json:"sessionID"`
	Asking    string     `json:"askingSessionID"`
	Tool      *wireTool  `json:"tool"`
	MCPTool   *MCPTool   `json:"mcpTool"`
	Directory string     `json:"directory"`
	CreatedAt time.Time  `json:"createdAt"`
	Deadline  *time.Time `json:"deadline"`
	Ending    string     `json:"ending"`
	Result    *Result    `json:"result"`
}

func decodeElicitation(what string, body []byte) (*Elicitation, error) {
	var w wireElicitation
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, fmt.Errorf("questiond: %s: the answer is not an elicitation: %w", what, err)
	}
	if w.ID == "" || (w.Status != StatusPending && w.Status != StatusResolved) || (w.Status == StatusResolved && w.Result == nil) {
		return nil, fmt.Errorf("questiond: %s: the answer is not an elicitation: %.200s", what, body)
	}
	var tool *Tool
	if w.Tool != nil {
		tool = &Tool{MessageID: w.Tool.MessageID, CallID: w.Tool.CallID}
	}
	return &Elicitation{
		ID: w.ID, Status: w.Status, SessionID: w.SessionID, AskingSessionID: w.Asking, Directory: w.Directory,
		Ending: w.Ending, Tool: tool, MCPTool: w.MCPTool, CreatedAt: w.CreatedAt, Deadline: w.Deadline, Result: w.Result,
	}, nil
}

// Create asks the question and returns at once with the pending
// elicitation; collect its result with Wait or Get. It sends the request
// once, with an Idempotency-Key of its own, and never retries (Elicit
// retries under one key until it knows the question).
func (c *Client) Create(ctx context.Context, p Params) (*Elicitation, error) {
	key, err := newIdempotencyKey()
	if err != nil {
		return nil, err
	}
	ex, err := c.send(ctx, "POST", "/elicitations", nil, newCreateBody(p), key)
	if err != nil {
		return nil, fmt.Errorf("questiond: creating an elicitation: %w", err)
	}
	return decodeElicitation("creating an elicitation", ex.body)
}

// Get reads the elicitation id. With wait > 0 it long-polls: the server
// holds the request until the elicitation ends or wait (capped by the
// server's --max-wait) runs out, and then answers with it as it is. Get
// sends one request and never retries.
func (c *Client) Get(ctx context.Context, id string, wait time.Duration) (*Elicitation, error) {
	ex, err := c.do(ctx, "GET", "/elicitations/"+url.PathEscape(id), waitQuery(wait), nil)
	if err != nil {
		return nil, fmt.Errorf("questiond: reading elicitation %s: %w", id, err)
	}
	return decodeElicitation("reading elicitation "+id, ex.body)
}

// Withdraw ends the pending elicitation id; its result becomes cancel and
// operators see it rejected. Withdrawing one that already ended is an
// ErrNotFound error.
func (c *Client) Withdraw(ctx context.Context, id string) (*Elicitation, error) {
	ex, err := c.do(ctx, "DELETE", "/elicitations/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("questiond: withdrawing elicitation %s: %w", id, err)
	}
	return decodeElicitation("withdrawing elicitation "+id, ex.body)
}

// waitQuery is the long-poll query for wait (none for 0).
func waitQuery(wait time.Duration) url.Values {
	if wait <= 0 {
		return nil
	}
	return url.Values{"wait": {wait.String()}}
}
