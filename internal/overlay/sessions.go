package overlay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/pending"
)

// The OpenCode TUI shows a question only on the screen of the root
// session it is filed in, or of that root's direct child (its session
// route lists the questions of the root and its children, and none on a
// child's own screen). A question asked in a deeper session is filed in
// its ancestor that is a root's direct child, so it shows on the root's
// screen, beside what that subtree does.

// maxDepth bounds the walk up a session's parents: a server that answers
// with a loop of parents cannot hold a question up.
const maxDepth = 64

// sessionInfo is what questiond reads of an OpenCode Session.
type sessionInfo struct {
	ID        string `json:"id"`
	ParentID  string `json:"parentID"`
	Directory string `json:"directory"`
}

// sessionCache keeps the sessions questiond has read: a session's parent
// and directory never change, so nothing read goes stale, and a deleted
// session only costs a question filed where nobody looks. Bounded: full,
// it starts again empty.
type sessionCache struct {
	mu   sync.Mutex
	byID map[string]sessionInfo
}

const maxCachedSessions = 4096

func (c *sessionCache) get(id string) (sessionInfo, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.byID[id]
	return s, ok
}

func (c *sessionCache) put(s sessionInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil || len(c.byID) >= maxCachedSessions {
		c.byID = make(map[string]sessionInfo)
	}
	c.byID[s.ID] = s
}

// Place implements ask.Hosted. A session the server has is filed in
// itself when it is a root or a root's child, else in its ancestor that is
// a root's child, with that session's directory. A question asked in a
// session the server does not have, during an MCP tool call, is filed so
// in the session of the one call of that tool in flight, linked to it.
// Anything else is not placed (ok false): questiond files it itself.
func (u *Upstream) Place(ctx context.Context, sessionID string, tool *pending.MCPTool) (ask.Placement, bool, error) {
	if sessionID != "" {
		p, ok, err := u.placeIn(ctx, sessionID)
		if ok || err != nil {
			return p, ok, err
		}
	}
	if tool == nil {
		return ask.Placement{}, false, nil
	}
	call, ok := u.calls.find(ctx, tool, callWait)
	if !ok {
		return ask.Placement{}, false, nil
	}
	p, ok, err := u.placeIn(ctx, call.SessionID)
	if ok {
		p.Tool = &pending.Tool{MessageID: call.MessageID, CallID: call.CallID}
	}
	return p, ok, err
}

// callWait is how long a question asked during an MCP tool call waits to
// hear of that call from the server's event stream, which races it.
const callWait = 2 * time.Second

// placeIn places a question asked in session id, which the server may not
// have.
func (u *Upstream) placeIn(ctx context.Context, id string) (ask.Placement, bool, error) {
	chain, err := u.ancestry(ctx, id)
	if err != nil || len(chain) == 0 {
		return ask.Placement{}, false, err
	}
	target := chain[0]
	if len(chain) > 2 {
		target = chain[len(chain)-2]
	}
	return ask.Placement{SessionID: target.ID, Directory: target.Directory}, true, nil
}

// Root is the root session of session id's tree (id itself for a root),
// as the server tells it; ok is false when the server does not have id.
// Sessions read once are cached, so a tree asked about again costs nothing.
func (u *Upstream) Root(ctx context.Context, id string) (root string, ok bool, err error) {
	chain, err := u.ancestry(ctx, id)
	if err != nil || len(chain) == 0 {
		return "", false, err
	}
	return chain[len(chain)-1].ID, true, nil
}

// ancestry is session id and its ancestors up to its root, or nothing
// when the server does not have id.
func (u *Upstream) ancestry(ctx context.Context, id string) ([]sessionInfo, error) {
	var chain []sessionInfo
	for next := id; next != ""; {
		if len(chain) == maxDepth {
			return nil, fmt.Errorf("session %s has more than %d ancestors", id, maxDepth)
		}
		s, found, err := u.session(ctx, next)
		if err != nil {
			return nil, err
		}
		if !found {
			break // id is not the server's; or a parent was deleted meanwhile, and its child is a root now
		}
		chain = append(chain, s)
		next = s.ParentID
	}
	return chain, nil
}

// session reads session id from the server (GET /session/{id}), or from
// the cache.
func (u *Upstream) session(ctx context.Context, id string) (sessionInfo, bool, error) {
	if s, ok := u.sessions.get(id); ok {
		return s, true, nil
	}
	res, err := u.Do(ctx, http.MethodGet, "/session/"+url.PathEscape(id), nil, http.Header{"Accept": {"application/json"}})
	if err != nil {
		return sessionInfo{}, false, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	switch {
	case err != nil:
		return sessionInfo{}, false, fmt.Errorf("%w: reading GET /session/%s: %v", ErrUnreachable, id, err)
	case res.StatusCode == http.StatusNotFound:
		return sessionInfo{}, false, nil
	case res.StatusCode != http.StatusOK:
		return sessionInfo{}, false, fmt.Errorf("%w: GET /session/%s answered %d: %.200s", ErrUnreachable, id, res.StatusCode, body)
	}
	var s sessionInfo
	if err := json.Unmarshal(body, &s); err != nil || s.ID != id {
		return sessionInfo{}, false, fmt.Errorf("%w: GET /session/%s answered no such session: %.200s", ErrUnreachable, id, body)
	}
	u.sessions.put(s)
	return s, true, nil
}
