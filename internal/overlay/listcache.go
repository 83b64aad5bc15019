package overlay

import (
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
)

// The server's question list changes only with its question.* events (a
// question asked, replied or rejected) and when an instance of it is
// disposed. While questiond hears its event stream (Watch), a list it
// fetched stays the server's answer until one of those is heard, so
// GET /question is answered from it instead of asking the server each
// time. Every such event, and every request questiond forwards that could
// change something (any method but GET, HEAD and OPTIONS), makes every
// list kept stale: no event is read for its directory, so no list is
// patched by guesswork. A client that learns of a change through
// questiond (a relayed stream, a reply it forwarded) lists after the
// change, as it would at the server; one that learns of it elsewhere may
// list the old list for as long as the server's event takes to reach
// questiond.

// Bounds of the lists kept: one per scope a client lists (a directory, a
// workspace), each at most maxCachedList bytes; beyond them a list is
// fetched each time.
const (
	maxCachedLists = 256
	maxCachedList  = 1 << 20
	maxScopeKey    = 4 << 10
)

// questionLists holds the server's GET /question answers by scope, each
// with the version of the server's questions it was fetched at.
type questionLists struct {
	// version counts the changes heard that may alter a list; a list
	// fetched at an older one is stale.
	version atomic.Uint64
	// live is set while Watch hears the server's stream: only then is a
	// change sure to be heard.
	live atomic.Bool

	mu      sync.Mutex
	byScope map[string]cachedList
}

type cachedList struct {
	version uint64
	body    []byte
}

// changed makes every list kept stale.
func (l *questionLists) changed() { l.version.Add(1) }

// heard makes the lists stale when an event of the server's of
// eventType may have changed them.
func (l *questionLists) heard(eventType string) {
	if changesQuestions(eventType) {
		l.changed()
	}
}

// changesQuestions reports whether an event of the server's may change
// its question list: a question's, an instance disposed, or a session
// deleted (whatever becomes of its questions then).
func changesQuestions(eventType string) bool {
	return strings.HasPrefix(eventType, "question.") || strings.HasSuffix(eventType, ".disposed") ||
		eventType == "session.deleted"
}

// watching says whether the server's stream is heard: a list kept from
// before it was (or while it was not) is never used.
func (l *questionLists) watching(live bool) {
	l.changed()
	l.live.Store(live)
	l.changed()
	if !live {
		l.mu.Lock()
		l.byScope = nil
		l.mu.Unlock()
	}
}

// get returns the list kept for scope if it is still the server's.
func (l *questionLists) get(scope string) ([]byte, bool) {
	if !l.live.Load() {
		return nil, false
	}
	l.mu.Lock()
	c, ok := l.byScope[scope]
	l.mu.Unlock()
	if !ok || c.version != l.version.Load() {
		return nil, false
	}
	return c.body, true
}

// put keeps body, fetched at version, for scope.
func (l *questionLists) put(scope string, version uint64, body []byte) {
	if len(body) > maxCachedList || len(scope) > maxScopeKey || !l.live.Load() || version != l.version.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byScope == nil {
		l.byScope = make(map[string]cachedList)
	}
	if _, ok := l.byScope[scope]; !ok && len(l.byScope) >= maxCachedLists {
		for k, c := range l.byScope { // room: drop the stale first, else any
			if c.version != version {
				delete(l.byScope, k)
			}
		}
		if len(l.byScope) >= maxCachedLists {
			for k := range l.byScope {
				delete(l.byScope, k)
				break
			}
		}
	}
	l.byScope[scope] = cachedList{version: version, body: bytes.Clone(body)}
}

// listScope is the key of a GET /question's scope: its query (without
// questiond's credentials) and its directory header, as the server reads
// them.
func listScope(query url.Values, header http.Header) string {
	return query.Encode() + "\x00" + strings.Join(header.Values("X-Opencode-Directory"), "\x00")
}

// changesState reports whether a request the server gets may change its
// state (its questions among it).
func changesState(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// relayed is one of the server's event streams relayed to a client: the
// lists go stale before the client gets a question.* frame, so a client
// that lists after hearing of a change lists after it.
type relayed struct {
	*FrameReader
	lists *questionLists
}

func (r relayed) Next() ([]byte, error) {
	f, err := r.FrameReader.Next()
	if err == nil && (bytes.Contains(f, []byte(`"question.`)) || bytes.Contains(f, []byte(`disposed"`)) ||
		bytes.Contains(f, []byte(`"session.deleted"`))) {
		if p, ok := Peek(f); ok {
			r.lists.heard(p.Type)
		}
	}
	return f, err
}

// RelayStream is Stream for a stream relayed to a client (see relayed).
func (u *Upstream) RelayStream(ctx context.Context, path string, query url.Values, header http.Header) (Frames, error) {
	frames, err := u.Stream(ctx, path, query, header)
	if err != nil {
		return nil, err
	}
	return relayed{FrameReader: frames, lists: &u.lists}, nil
}

// Frames is an event stream of the server's, frame by frame (an sse.Feed).
type Frames interface {
	Next() ([]byte, error)
	Close() error
}
