package overlay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// maxListBytes bounds the server's question list questiond reads to merge
// with its own: far above any real list, far below what could hurt.
const maxListBytes = 64 << 20

// Questions returns the server's GET /question for r's scope (its
// directory query or header), as r asked it: the list questiond keeps for
// that scope while it is still the server's (see questionLists), else
// fetched. A status other than 200 comes back as a *StatusError holding
// the server's answer, to pass on as it is. The list returned is shared:
// the caller must not change it.
func (u *Upstream) Questions(r *http.Request) (json.RawMessage, error) {
	query := r.URL.Query()
	query.Del("auth_token")
	header := http.Header{"Accept": {"application/json"}}
	if dir := r.Header.Values("x-opencode-directory"); len(dir) > 0 {
		header["X-Opencode-Directory"] = dir
	}
	scope := listScope(query, header)
	if list, ok := u.lists.get(scope); ok {
		return list, nil
	}
	version := u.lists.version.Load() // before asking: a change meanwhile makes it stale
	list, err := u.fetchQuestions(r.Context(), query, header)
	if err == nil {
		u.lists.put(scope, version, list)
	}
	return list, err
}

// fetchQuestions asks the server for its GET /question.
func (u *Upstream) fetchQuestions(ctx context.Context, query url.Values, header http.Header) (json.RawMessage, error) {
	res, err := u.Do(ctx, http.MethodGet, "/question", query, header)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, maxListBytes+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: reading GET /question: %v", ErrUnreachable, err)
	case len(body) > maxListBytes:
		return nil, fmt.Errorf("%w: GET /question answered more than %d bytes", ErrUnreachable, maxListBytes)
	case res.StatusCode != http.StatusOK:
		return nil, &StatusError{Status: res.StatusCode, Header: res.Header.Clone(), Body: body}
	}
	return body, nil
}

// StatusError is an answer of the server's that questiond passes on as it
// came, instead of merging it.
type StatusError struct {
	Status int
	Header http.Header
	Body   []byte
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("the OpenCode server answered %d: %.200s", e.Status, e.Body)
}

// Write sends the server's answer on to the client.
func (e *StatusError) Write(w http.ResponseWriter) {
	if ct := e.Header.Get("Content-Type"); ct != "" {
		w.Header().Set("Content-Type", ct)
	}
	if auth := e.Header.Values("Www-Authenticate"); len(auth) > 0 {
		w.Header()["Www-Authenticate"] = auth
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(e.Body)
}

// MergeLists joins two JSON arrays of OpenCode QuestionRequests into one,
// ordered by id: ids sort by creation time, so the merged list is oldest
// first, as each server lists its own. Elements are kept byte for byte.
func MergeLists(upstream, local json.RawMessage) (json.RawMessage, error) {
	var theirs, ours []json.RawMessage
	if err := json.Unmarshal(upstream, &theirs); err != nil {
		return nil, fmt.Errorf("%w: GET /question is not a JSON array: %v", ErrUnreachable, err)
	}
	if err := json.Unmarshal(local, &ours); err != nil {
		return nil, fmt.Errorf("questiond's own list: %w", err)
	}
	type entry struct {
		id  string
		raw json.RawMessage
	}
	all := make([]entry, 0, len(theirs)+len(ours))
	for _, list := range [][]json.RawMessage{theirs, ours} {
		for _, raw := range list {
			var head struct {
				ID string `json:"id"`
			}
			_ = json.Unmarshal(raw, &head) // an element without an id sorts first, kept as it is
			all = append(all, entry{head.ID, raw})
		}
	}
	slices.SortStableFunc(all, func(a, b entry) int { return strings.Compare(a.id, b.id) })
	var b bytes.Buffer
	b.WriteByte('[')
	for i, e := range all {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(e.raw)
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}
