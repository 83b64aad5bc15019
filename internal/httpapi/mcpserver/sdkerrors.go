package mcpserver

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// sdkErrorWriter turns the MCP SDK's plain-text refusals (http.Error: a
// 4xx with text/plain) into questiond's JSON errors, so every refusal on
// /mcp names its problem the way every other route does. Everything else —
// JSON-RPC answers, event streams — passes through untouched.
type sdkErrorWriter struct {
	http.ResponseWriter
	// mu orders the SDK's writes with comment's, which come from a tool
	// call's goroutine. onHeader runs under it and takes Endpoint.mu: mu is
	// always taken first, and nothing holding Endpoint.mu writes.
	mu     sync.Mutex
	status int          // a refusal being captured; 0 while passing through
	text   bytes.Buffer // its message
	sent   int          // the status passed through, once written
	events bool         // what passed through is an event stream
	over   bool         // the SDK is done with the response: nothing more goes out
	// onHeader, when set, runs once, just before a passed-through answer's
	// header goes out: the client cannot act on the answer before it ran.
	onHeader func()
	post     *mcpPost // the POST body's message(s), for JSON-RPC answers
}

func (w *sdkErrorWriter) WriteHeader(status int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writeHeader(status)
}

func (w *sdkErrorWriter) writeHeader(status int) {
	if status >= 400 && status < 500 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = status
		return
	}
	w.sent = status
	w.events = strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream")
	if w.onHeader != nil {
		w.onHeader()
		w.onHeader = nil
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *sdkErrorWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status != 0 {
		return w.text.Write(p)
	}
	if w.sent == 0 {
		w.writeHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(p)
}

func (w *sdkErrorWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.status == 0 {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func (w *sdkErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// comment sends an SSE comment on an event stream that is passing through,
// between the SDK's events (each is one Write): every SSE reader skips it,
// and it keeps idle-timeout proxies and clients (Node's fetch) from ending
// a response that waits for a person. The SDK sends an event stream's
// header with its first event; a tool call runs only after the SDK set that
// header, so comment may send it first. It does nothing on an answer that is
// not an event stream or once the SDK is done.
func (w *sdkErrorWriter) comment() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.over {
		return
	}
	if w.sent == 0 && w.status == 0 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		w.writeHeader(http.StatusOK)
	}
	if w.status != 0 || w.sent != http.StatusOK || !w.events {
		return
	}
	if _, err := io.WriteString(w.ResponseWriter, ": waiting for an answer\n\n"); err == nil {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

// finish writes a captured refusal as questiond's JSON error.
func (w *sdkErrorWriter) finish(m *Endpoint, r *http.Request) {
	w.mu.Lock()
	w.over = true
	w.mu.Unlock()
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
