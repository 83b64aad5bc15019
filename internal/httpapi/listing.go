package httpapi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/pending"
)

// GET /question is the operator's hot path: every client polls it, and its
// answer grows with every pending question. Each question's list item is
// encoded once, memoized in its record (pending.Question.Listing), so a list
// costs copying bytes, not encoding them; and the answer for each directory
// scope is kept until the store's pending list changes
// (ask.QuestionStore.PendingVersion), so most requests copy nothing at all.

// maxListScopes bounds how many directory scopes keep a list: a directory
// is whatever a client sends, so the cache must not grow with them.
const maxListScopes = 64

// listCache keeps the last GET /question body of each directory scope with
// the store's pending version it was made at. Bodies are never modified
// once kept.
type listCache struct {
	mu     sync.Mutex
	bodies map[string]versionedList
}

type versionedList struct {
	version uint64
	body    []byte
}

func (c *listCache) get(dir string, version uint64) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.bodies[dir]
	return l.body, ok && l.version == version
}

// put keeps body unless a newer one is kept already; when the bound is
// reached the cache starts over, which costs at most one rebuild per scope.
func (c *listCache) put(dir string, version uint64, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, kept := c.bodies[dir]
	switch {
	case kept && l.version > version:
		return
	case c.bodies == nil, !kept && len(c.bodies) >= maxListScopes:
		c.bodies = make(map[string]versionedList)
	}
	c.bodies[dir] = versionedList{version: version, body: body}
}

// questionList is the body of GET /question for directory scope dir.
func (s *Server) questionList(ctx context.Context, dir string) ([]byte, error) {
	// Read before List: if the list changes meanwhile, the body is newer
	// than its version says and is simply made again next time.
	version := s.store.PendingVersion()
	if body, ok := s.lists.get(dir, version); ok {
		return body, nil
	}
	questions, err := s.store.List(ctx, pending.Filter{Directory: dir})
	if err != nil {
		return nil, err
	}
	byCreation(questions)
	body, err := appendQuestionList(make([]byte, 0, listSizeHint(questions)), questions)
	if err != nil {
		return nil, err
	}
	s.lists.put(dir, version, body)
	return body, nil
}

// byCreation sorts questions in the order they were created, by id (ids
// ascend with creation, see package ident): the order OpenCode clients
// sort by, and the same on every replica, whatever order each one's store
// learnt of them in.
func byCreation(questions []*pending.Question) {
	slices.SortFunc(questions, func(a, b *pending.Question) int { return strings.Compare(a.ID, b.ID) })
}

// listSizeHint guesses the size of a list's body from its first item, so
// that building it rarely grows the buffer.
func listSizeHint(questions []*pending.Question) int {
	if len(questions) == 0 {
		return 2
	}
	return (len(listItem(questions[0])) + 1) * len(questions) * 5 / 4
}

// errUnencodable is a question whose list item could not be encoded.
var errUnencodable = errors.New("a question could not be encoded")

// appendQuestionList appends the JSON array of OpenCode QuestionRequests for
// questions to dst, byte for byte what wire.MarshalJSON makes of the same slice.
func appendQuestionList(dst []byte, questions []*pending.Question) ([]byte, error) {
	dst = append(dst, '[')
	for i, q := range questions {
		item := listItem(q)
		if item == nil {
			return nil, errUnencodable
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, item...)
	}
	return append(dst, ']'), nil
}

// listItem is q's encoded QuestionRequest, or nil if it cannot be encoded.
func listItem(q *pending.Question) []byte {
	return q.Listing.Bytes(func() []byte {
		item, err := wire.MarshalJSON(wire.ToQuestionRequest(q))
		if err != nil {
			return nil
		}
		return item
	})
}
