package httpapi

import (
	"fmt"
	"maps"
	"net/http"

	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/session"
)

// A question asked without a sessionID (POST /elicit, POST /elicitations:
// questiond ask, scripts, the client package) is filed under its agent's
// inbox: one session per agent token name, one shared by anonymous agents.
// Its id is derived from the agent's name, so every restart and every
// replica files the agent's questions under the same session, and the
// operator console lists one session per agent instead of one per question.
// MCP connections without a session still get a fresh one each: an MCP
// session is one conversation.

// inboxLabel keeps inbox ids apart from anything else derived from a name.
const inboxLabel = "questiond inbox\x00"

// inboxSession is the inbox of the agent with token name agent ("":
// anonymous agents).
func inboxSession(agent string) string {
	return ident.Derived(ident.Session, inboxLabel+agent)
}

// inboxTitle is how the console lists an agent's inbox.
func inboxTitle(agent string) string {
	const what = "questions asked without a session"
	if agent == "" {
		return "Questions asked without a session"
	}
	return agent + ": " + what
}

// inboxOwners maps the inbox of every agent auth knows (and, without agent
// tokens, the anonymous one) to that agent.
func inboxOwners(auth Auth) map[string]string {
	owners := map[string]string{}
	if len(auth.AgentTokens) == 0 {
		owners[inboxSession("")] = ""
	}
	for name := range maps.Keys(auth.AgentTokens) {
		owners[inboxSession(name)] = name
	}
	return owners
}

// othersInbox refuses session id to agent when it is another agent's inbox:
// only its agent asks there or configures it (and an operator may
// configure it).
func (s *Server) othersInbox(id, agent string) error {
	owner, ok := s.inboxes[id]
	if !ok || owner == agent || agent == session.Operator {
		return nil
	}
	return &statusError{http.StatusForbidden, "Forbidden", fmt.Sprintf(
		"session %s is agent %s's inbox for questions asked without a session; only %s uses it", id, owner, owner)}
}

// inboxAsParent refuses a record that names an inbox as its parent: an
// inbox lists its own agent's questions asked without a session, and
// nothing else, whoever asks.
func (s *Server) inboxAsParent(rec session.Session) error {
	if _, ok := s.inboxes[rec.ParentID]; ok && rec.ParentID != "" {
		return inboxParentError(rec.ParentID)
	}
	return nil
}

func inboxParentError(id string) error {
	return &statusError{http.StatusForbidden, "Forbidden", fmt.Sprintf(
		"session %s is an agent's inbox for questions asked without a session; an inbox cannot be a parent session\n  at [\"parentSessionID\"]", id)}
}
