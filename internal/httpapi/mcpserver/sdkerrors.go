package mcpserver

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// sdkErrorWriter turns the MCP SDK's plain-text refusals (http.Error: a
// 4xx with text/plain) into questiond's JSON errors, so every refusal on
// /mcp names its problem the way every other route does. Everything else —
// JSON-RPC answers, event streams — passes through untouched.
type sdkErrorWriter struct {
	http.ResponseWriter
	status int          // a refusal being captured; 0 while passing through
	text   bytes.Buffer // its message
	sent   int          // the status passed through, once written
	// onHeader, when set, runs once, just before a passed-through answer's
	// header goes out: the client cannot act on the answer before it ran.
	onHeader func()
	post     *mcpPost // the POST body's message(s), for JSON-RPC answers
}

func (w *sdkErrorWriter) WriteHeader(status int) {
	if status >= 400 && status < 500 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = status
		return
	}
	w.sent = status
	if w.onHeader != nil {
		w.onHeader()
		w.onHeader = nil
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *sdkErrorWriter) Write(p []byte) (int, error) {
	if w.status != 0 {
		return w.text.Write(p)
	}
	if w.sent == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *sdkErrorWriter) Flush() {
	if w.status == 0 {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *sdkErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish writes a captured refusal as questiond's JSON error.
func (w *sdkErrorWriter) finish(m *Endpoint, r *http.Request) {
	if w.status == 0 {
		return
	}
	message := strings.TrimSpace(w.text.String())
	h := w.Header()
	h.Del("X-Content-Type-Options")
	var err error
	if w.status == http.StatusBadRequest {
		if answer, accepted := rpcAnswerFor(w.post, message); accepted {
			h.Del("Content-Type")
			w.ResponseWriter.WriteHeader(http.StatusAccepted)
			return
		} else if answer != nil {
			writeRPCRefusal(w.ResponseWriter, answer)
			return
		}
	}
	switch w.status {
	case http.StatusBadRequest:
		kind, lower := wire.KindPayload, strings.ToLower(message)
		if strings.Contains(lower, "accept") || strings.Contains(lower, "header") || strings.Contains(lower, "protocol version") {
			kind = wire.KindHeaders
		}
		err = wire.NewBadRequest(kind, "MCP: %s", message)
	case http.StatusNotFound:
		err = wire.NewStatus(http.StatusNotFound, "NotFoundError", "MCP "+message+": start a new MCP session (initialize without Mcp-Session-Id)")
	case http.StatusForbidden:
		err = wire.NewStatus(http.StatusForbidden, "Forbidden", "MCP: "+message)
	case http.StatusMethodNotAllowed:
		err = wire.NewStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", "Method "+r.Method+" is not allowed on "+r.URL.Path)
	case http.StatusUnsupportedMediaType:
		err = &wire.UnsupportedMediaType{ContentType: r.Header.Get("Content-Type")}
	case http.StatusRequestEntityTooLarge:
		err = wire.NewStatus(http.StatusRequestEntityTooLarge, "PayloadTooLarge", message)
	default:
		err = wire.NewStatus(w.status, http.StatusText(w.status), message)
	}
	m.writeError(w.ResponseWriter, r, err)
}
