package mcpserver

import (
	"net/http"
	"strings"

	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/session"
)

// sessionParam is the session an MCP client names when it connects.
func sessionParam(r *http.Request) (string, error) {
	query, header := r.URL.Query().Get("session"), strings.TrimSpace(r.Header.Get("X-Questiond-Session"))
	switch {
	case query != "" && header != "" && query != header:
		return "", wire.NewBadRequest(wire.KindHeaders, "the session query parameter (%q) and the X-Questiond-Session header (%q) differ\n  at [\"session\"]", query, header)
	case query != "":
		if !session.ValidID(query) {
			return "", wire.NewBadRequest(wire.KindQuery, "Expected a session id like \"ses_…\", got %q\n  at [\"session\"]", query)
		}
		return query, nil
	case header != "":
		if !session.ValidID(header) {
			return "", wire.NewBadRequest(wire.KindHeaders, "Expected a session id like \"ses_…\", got %q\n  at [\"X-Questiond-Session\"]", header)
		}
		return header, nil
	}
	return "", nil
}
