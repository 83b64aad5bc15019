package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/ui/inline"
)

// The operator console: the routes the OpenCode TUI (opencode attach URL)
// needs before it shows questiond's questions. They hold no state of their
// own. A session is a projection of the store: every session with a pending
// question or a retained ended one is an OpenCode root session, and leaves
// the list when its last result leaves retention.

// titleMaxRunes bounds the part of a title taken from a question's message.
const titleMaxRunes = 60

// pendingMarker starts the title of a session that waits for the operator.
const pendingMarker = "[?] "

func (c *Console) Config(w http.ResponseWriter, r *http.Request) {
	wire.WriteJSON(w, http.StatusOK, struct{}{})
}

func (c *Console) ConfigProviders(w http.ResponseWriter, r *http.Request) {
	wire.WriteJSON(w, http.StatusOK, struct {
		Providers []consoleProvider `json:"providers"`
		Default   map[string]string `json:"default"`
	}{consoleProviders(), consoleDefaultModel()})
}

func (c *Console) Providers(w http.ResponseWriter, r *http.Request) {
	wire.WriteJSON(w, http.StatusOK, struct {
		All       []consoleProvider `json:"all"`
		Default   map[string]string `json:"default"`
		Connected []string          `json:"connected"`
	}{consoleProviders(), consoleDefaultModel(), []string{consoleProviderID}})
}

func (c *Console) Agents(w http.ResponseWriter, r *http.Request) {
	wire.WriteJSON(w, http.StatusOK, []consoleAgentInfo{{
		Name: consoleAgent, Description: "Shows agents' questions to the operator; it runs no prompts",
		Mode: "primary", Native: true, Permission: []string{},
	}})
}

// PromptRefused answers POST /session and POST /session/{id}/message:
// questiond runs no agent, so a typed prompt has nowhere to go.
func (c *Console) PromptRefused(w http.ResponseWriter, r *http.Request) {
	c.writeError(w, r, errConsolePrompt)
}

// consoleSession is one session as the console shows it: its questions,
// pending and retained, oldest first.
type consoleSession struct {
	id        string
	questions []*pending.Question
	inbox     bool   // an agent's inbox: its questions asked without a session
	agent     string // the inbox's agent
}

// sessions groups the pending and retained questions that f selects
// by session. Sessions come in no particular order; each one's questions are
// oldest first.
func (c *Console) sessions(ctx context.Context, f pending.Filter) ([]*consoleSession, error) {
	f.Ended = true
	questions, err := c.store.List(ctx, f)
	if err != nil {
		return nil, err
	}
	bySession := map[string]*consoleSession{}
	var sessions []*consoleSession
	for _, q := range questions {
		cs := bySession[q.SessionID]
		if cs == nil {
			cs = &consoleSession{id: q.SessionID}
			cs.agent, cs.inbox = c.questions.InboxOwner(q.SessionID)
			if !cs.inbox && q.SessionID == ask.Inbox(q.Owner) {
				cs.agent, cs.inbox = q.Owner, true // an agent no longer configured
			}
			bySession[q.SessionID] = cs
			sessions = append(sessions, cs)
		}
		cs.questions = append(cs.questions, q)
	}
	for _, cs := range sessions {
		// Question ids ascend with creation.
		slices.SortFunc(cs.questions, func(a, b *pending.Question) int { return strings.Compare(a.ID, b.ID) })
	}
	return sessions, nil
}

func (cs *consoleSession) pending() bool {
	return slices.ContainsFunc(cs.questions, func(q *pending.Question) bool { return q.Ended == nil })
}

// info is the session as OpenCode's Session.
func (cs *consoleSession) info(version string) sessionInfo {
	return cs.summary().info(version, cs.pending())
}

// summary folds the session's questions into what its info needs.
func (cs *consoleSession) summary() *sessionSummary {
	sm := &sessionSummary{id: cs.id, first: cs.questions[0], dir: cs.questions[0].Directory, inbox: cs.inbox, agent: cs.agent}
	for _, q := range cs.questions {
		sm.add(q)
	}
	return sm
}

// sessionSummary is what a session's info needs of its questions: the first
// one, the directory they share, and when the session last changed. It can
// be kept up to date question by question (see Console), so a session
// with thousands of retained results need not be read again for each event.
type sessionSummary struct {
	id      string
	first   *pending.Question
	dir     string    // the directory every question has; "" when they differ
	updated int64     // ms
	inbox   bool      // an agent's inbox: its questions asked without a session
	agent   string    // the inbox's agent
	loaded  time.Time // when it was read from the store (the console view's)
}

// add takes q, new or just ended, into the summary.
func (sm *sessionSummary) add(q *pending.Question) {
	if q.Directory != sm.dir {
		sm.dir = ""
	}
	sm.updated = max(sm.updated, q.CreatedAt.UnixMilli())
	if q.Ended != nil {
		sm.updated = max(sm.updated, q.Ended.At.UnixMilli())
	}
}

// info is the session as OpenCode's Session, marked pending when waiting.
// Its directory is the one its questions share; questions from several
// directories (or none) give "", which the TUI sends back unscoped, so its
// replies reach every question.
func (sm *sessionSummary) info(version string, waiting bool) sessionInfo {
	title := consoleTitle(sm.first)
	if sm.inbox {
		title = ask.InboxTitle(sm.agent)
	}
	if waiting {
		title = pendingMarker + title
	}
	slug := sm.first.Owner
	if slug == "" {
		slug = consoleAgent
	}
	return sessionInfo{
		ID: sm.id, Slug: slug, ProjectID: consoleProjectID, Directory: sm.dir, Title: title, Version: version,
		Time: sessionTime{Created: sm.first.CreatedAt.UnixMilli(), Updated: sm.updated},
	}
}

// consoleTitle says who asks and what about: the asking agent's token name,
// else the MCP client's name, if any, and the first line of its first
// question's message.
func consoleTitle(q *pending.Question) string {
	// Its lines are joined: a title is one line, all of it the asker's.
	if title := wire.OneLine(inline.Plain(strings.Join(strings.Fields(q.Title), " ")), titleMaxRunes); title != "" {
		return title // the asker's own (questiond bridge: "<name> via <host>")
	}
	what := strings.TrimSpace(q.Message)
	if what == "" && len(q.Questions) > 0 {
		what = strings.TrimSpace(q.Questions[0].Question)
	}
	// A title line has no styles: the agent's inline markdown shows as the
	// /ui page shows it without them, markers gone (package inline).
	what = wire.OneLine(inline.Plain(what), titleMaxRunes)
	who := cmp.Or(q.Owner, q.Client)
	switch {
	case who != "" && what != "":
		return who + ": " + what
	case who != "":
		return who
	case what != "":
		return what
	}
	return "question " + q.ID
}

// SessionList serves GET /session with the TUI's queries: start (ms:
// sessions updated at or after), search (a case-insensitive title
// substring) and limit, newest update first. Every session is a root, so
// roots=true changes nothing.
func (c *Console) SessionList(w http.ResponseWriter, r *http.Request) {
	dir, err := wire.RequestDirectory(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	query := r.URL.Query()
	start, err := optionalInt(query.Get("start"), "start", 0)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	limit, err := optionalInt(query.Get("limit"), "limit", 1)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	search := strings.ToLower(query.Get("search"))
	sessions, err := c.sessions(r.Context(), pending.Filter{Directory: dir})
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	out := make([]sessionInfo, 0, len(sessions))
	for _, cs := range sessions {
		info := cs.info(c.version)
		if info.Time.Updated < start || !strings.Contains(strings.ToLower(info.Title), search) {
			continue
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b sessionInfo) int {
		return cmp.Or(cmp.Compare(b.Time.Updated, a.Time.Updated), strings.Compare(a.ID, b.ID))
	})
	if limit > 0 && int64(len(out)) > limit {
		out = out[:limit]
	}
	wire.WriteJSON(w, http.StatusOK, out)
}

// optionalInt parses an integer query parameter that must be at least
// least; an absent one is 0.
func optionalInt(v, name string, least int64) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < least {
		return 0, wire.NewBadRequest(wire.KindQuery, "Expected an integer of at least %d, got %q\n  at [%q]", least, v, name)
	}
	return n, nil
}

// SessionStatus serves GET /session/status: busy for every session
// that waits for the operator; OpenCode omits idle sessions.
func (c *Console) SessionStatus(w http.ResponseWriter, r *http.Request) {
	dir, err := wire.RequestDirectory(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	questions, err := c.store.List(r.Context(), pending.Filter{Directory: dir})
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	out := map[string]sessionStatus{}
	for _, q := range questions {
		out[q.SessionID] = sessionStatus{Type: "busy"}
	}
	wire.WriteJSON(w, http.StatusOK, out)
}

// session finds the session in the URL, or OpenCode's 404.
func (c *Console) session(r *http.Request) (*consoleSession, error) {
	dir, err := wire.RequestDirectory(r)
	if err != nil {
		return nil, err
	}
	id := chi.URLParam(r, "sessionID")
	sessions, err := c.sessions(r.Context(), pending.Filter{Directory: dir, SessionID: id})
	if err != nil {
		return nil, err
	}
	if len(sessions) == 0 {
		return nil, wire.NewStatus(http.StatusNotFound, "NotFoundError", "Session not found: "+id)
	}
	return sessions[0], nil
}

func (c *Console) SessionInfo(w http.ResponseWriter, r *http.Request) {
	cs, err := c.session(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	wire.WriteJSON(w, http.StatusOK, cs.info(c.version))
}

// SessionMessages serves GET /session/{id}/message: one assistant
// message per question, oldest first; limit keeps the newest.
func (c *Console) SessionMessages(w http.ResponseWriter, r *http.Request) {
	limit, err := optionalInt(r.URL.Query().Get("limit"), "limit", 0)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	cs, err := c.session(r)
	if err != nil {
		c.writeError(w, r, err)
		return
	}
	questions := cs.questions
	if limit > 0 && int64(len(questions)) > limit {
		questions = questions[int64(len(questions))-limit:]
	}
	out := make([]consoleMessage, len(questions))
	for i, q := range questions {
		out[i] = questionMessage(q)
	}
	wire.WriteJSON(w, http.StatusOK, out)
}
