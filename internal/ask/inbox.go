package ask

import (
	"github.com/questiond/questiond/internal/ident"
	"github.com/questiond/questiond/internal/session"
)

// A question asked without a session (POST /elicit, POST /elicitations:
// questiond ask, scripts, the client package) is filed under its agent's
// inbox: one session per agent token name, one shared by anonymous agents.
// Its id is derived from the agent's name, so every restart and every
// replica files the agent's questions under the same session, and the
// operator console lists one session per agent instead of one per question.
// MCP connections without a session still get a fresh one each: an MCP
// session is one conversation.

// inboxLabel keeps inbox ids apart from anything else derived from a name.
const inboxLabel = "questiond inbox\x00"

// Inbox is the inbox session of the agent with token name agent ("":
// anonymous agents).
func Inbox(agent string) string {
	return ident.Derived(ident.Session, inboxLabel+agent)
}

// InboxTitle is how the console lists an agent's inbox.
func InboxTitle(agent string) string {
	const what = "questions asked without a session"
	if agent == "" {
		return "Questions asked without a session"
	}
	return agent + ": " + what
}

// inboxOwners maps the inbox of every agent named (and, without any, the
// anonymous one) to that agent.
func inboxOwners(agents []string) map[string]string {
	owners := map[string]string{}
	if len(agents) == 0 {
		owners[Inbox("")] = ""
	}
	for _, name := range agents {
		owners[Inbox(name)] = name
	}
	return owners
}

// InboxOwner returns the agent whose inbox session id is, and whether it is
// an inbox at all.
func (s *Service) InboxOwner(id string) (agent string, ok bool) {
	agent, ok = s.inboxes[id]
	return agent, ok
}

// OthersInbox refuses session id to agent when it is another agent's inbox:
// only its agent asks there or configures it (and an operator may
// configure it).
func (s *Service) OthersInbox(id, agent string) error {
	owner, ok := s.inboxes[id]
	if !ok || owner == agent || agent == session.Operator {
		return nil
	}
	return forbidden("session %s is agent %s's inbox for questions asked without a session; only %s uses it", id, owner, owner)
}

// InboxAsParent refuses a record that names an inbox as its parent: an
// inbox lists its own agent's questions asked without a session, and
// nothing else, whoever asks.
func (s *Service) InboxAsParent(rec session.Session) error {
	if _, ok := s.inboxes[rec.ParentID]; ok && rec.ParentID != "" {
		return inboxParentError(rec.ParentID)
	}
	return nil
}

func inboxParentError(id string) error {
	return forbidden("session %s is an agent's inbox for questions asked without a session; an inbox cannot be a parent session\n  at [\"parentSessionID\"]", id)
}
