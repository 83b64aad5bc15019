package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// Question capabilities of a session: what its questions may do. A session
// has exactly one.
const (
	CapabilityUser   = "user"   // ask the operator
	CapabilityParent = "parent" // ask through the parent session
	CapabilityNone   = "none"   // ask nobody: elicitations are refused with ErrForbidden
)

// Session is a session's question capability as questiond keeps it.
type Session struct {
	ID                 string `json:"id"`
	QuestionCapability string `json:"questionCapability"`
	ParentSessionID    string `json:"parentSessionID,omitempty"`
	// Configured is false when nobody set the session and the server's
	// default applies.
	Configured bool `json:"configured"`
}

type sessionBody struct {
	QuestionCapability string `json:"questionCapability"`
	ParentSessionID    string `json:"parentSessionID,omitempty"`
}

// SetSession sets the question capability of session id: CapabilityUser,
// CapabilityNone, or CapabilityParent with the parent's session id (and only
// then). MCP sessions that begin afterwards get the matching question tool;
// elicitations are checked against it when they are asked. Only the agent
// that owns a session (that first set it, asked in it or named it as a
// parent), or an operator, may change it (ErrForbidden otherwise).
func (c *Client) SetSession(ctx context.Context, id, capability, parentSessionID string) (*Session, error) {
	ex, err := c.do(ctx, "PUT", "/sessions/"+url.PathEscape(id), nil, sessionBody{capability, parentSessionID})
	if err != nil {
		return nil, fmt.Errorf("questiond: setting session %s: %w", id, err)
	}
	return decodeSession("setting session "+id, ex.body)
}

// GetSession reads the capability in force for session id: the server's
// default (Configured false) when nobody set it.
func (c *Client) GetSession(ctx context.Context, id string) (*Session, error) {
	ex, err := c.do(ctx, "GET", "/sessions/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("questiond: reading session %s: %w", id, err)
	}
	return decodeSession("reading session "+id, ex.body)
}

// DeleteSession forgets what was set for session id, so the server's
// default applies again, and returns the record as it was. A session
// nobody set is an ErrNotFound error.
func (c *Client) DeleteSession(ctx context.Context, id string) (*Session, error) {
	ex, err := c.do(ctx, "DELETE", "/sessions/"+url.PathEscape(id), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("questiond: deleting session %s: %w", id, err)
	}
	return decodeSession("deleting session "+id, ex.body)
}

func decodeSession(what string, body []byte) (*Session, error) {
	var s Session
	if err := json.Unmarshal(body, &s); err != nil || s.ID == "" || s.QuestionCapability == "" {
		return nil, fmt.Errorf("questiond: %s: the answer is not a session: %.200s", what, body)
	}
	return &s, nil
}
