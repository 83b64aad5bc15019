package overlay

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/questiond/questiond/internal/pending"
)

// calls keeps the OpenCode server's tool calls in flight, as its event
// stream tells them (message.part.updated with a tool part), so that a
// question a bridged MCP server asks during one of them is filed in the
// session whose call waits. Safe for concurrent use.
type calls struct {
	watching atomic.Bool // a stream tells the calls: find may wait to hear of one
	mu       sync.Mutex
	byPart   map[string]toolCall // part id → the call
	changed  chan struct{}       // closed and replaced on every change
}

// toolCall is one tool part in flight.
type toolCall struct {
	Tool      string // OpenCode's tool id: "<server>_<tool>" for MCP tools
	SessionID string
	MessageID string
	CallID    string
}

func newCalls() *calls {
	return &calls{byPart: map[string]toolCall{}, changed: make(chan struct{})}
}

// partEvent is what calls reads of an event: message.part.updated and
// message.part.removed (properties.part, or properties.partID), and
// session.deleted (properties.info.id, or properties.sessionID).
type partEvent struct {
	Type       string `json:"type"`
	Properties struct {
		SessionID string `json:"sessionID"`
		PartID    string `json:"partID"`
		Part      struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Tool      string `json:"tool"`
			CallID    string `json:"callID"`
			SessionID string `json:"sessionID"`
			MessageID string `json:"messageID"`
			State     struct {
				Status string `json:"status"`
			} `json:"state"`
		} `json:"part"`
		Info struct {
			ID string `json:"id"`
		} `json:"info"`
	} `json:"properties"`
}

// observe takes in one event's payload ({"type","properties"}), and
// ignores what it does not concern.
func (c *calls) observe(payload []byte) {
	var e partEvent
	if json.Unmarshal(payload, &e) != nil {
		return
	}
	p := e.Properties.Part
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Type {
	case "message.part.updated":
		if p.Type != "tool" || p.ID == "" {
			return
		}
		switch p.State.Status {
		case "pending", "running":
			c.byPart[p.ID] = toolCall{Tool: p.Tool, SessionID: p.SessionID, MessageID: p.MessageID, CallID: p.CallID}
		default: // completed, error
			delete(c.byPart, p.ID)
		}
	case "message.part.removed":
		delete(c.byPart, e.Properties.PartID)
	case "session.deleted":
		gone := e.Properties.Info.ID
		if gone == "" {
			gone = e.Properties.SessionID
		}
		for id, call := range c.byPart {
			if call.SessionID == gone {
				delete(c.byPart, id)
			}
		}
	default:
		return
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// reset forgets every call: the stream that told them was lost, and
// what ended meanwhile was not heard.
func (c *calls) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byPart = map[string]toolCall{}
	close(c.changed)
	c.changed = make(chan struct{})
}

// find returns the one call in flight of tool, waiting up to wait for it
// to be heard of (the server announces a call as it starts it, but that
// announcement and the question race each other to questiond). ok is false
// with none, or with several: nothing tells which of them asks.
func (c *calls) find(ctx context.Context, tool *pending.MCPTool, wait time.Duration) (toolCall, bool) {
	key := openCodeToolID(tool.Server, tool.Name)
	if !c.watching.Load() {
		wait = 0
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		c.mu.Lock()
		var found []toolCall
		for _, call := range c.byPart {
			if call.Tool == key {
				found = append(found, call)
			}
		}
		changed := c.changed
		c.mu.Unlock()
		switch {
		case len(found) == 1:
			return found[0], true
		case len(found) > 1:
			return toolCall{}, false
		}
		select {
		case <-changed:
		case <-timer.C:
			return toolCall{}, false
		case <-ctx.Done():
			return toolCall{}, false
		}
	}
}

// openCodeToolID is the id OpenCode gives tool of the MCP server it knows
// as server: both names with every character but ASCII letters, digits,
// "_" and "-" replaced by "_", joined by "_". OpenCode replaces UTF-16
// code units, so a character beyond the Basic Multilingual Plane (an
// emoji) becomes two.
func openCodeToolID(server, tool string) string {
	var b strings.Builder
	b.Grow(len(server) + 1 + len(tool))
	for i, name := range []string{server, tool} {
		if i > 0 {
			b.WriteByte('_')
		}
		for _, r := range name {
			switch {
			case r < utf8.RuneSelf && (r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'):
				b.WriteRune(r)
			case r > 0xFFFF:
				b.WriteString("__")
			default:
				b.WriteByte('_')
			}
		}
	}
	return b.String()
}
