package httpapi

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// Error kinds of OpenCode's BadRequest body: which part of the request was wrong.
const (
	kindParams  = "Params"
	kindQuery   = "Query"
	kindHeaders = "Headers"
	kindPayload = "Payload"
)

// badRequest is a client error that becomes OpenCode's 400 body
// {"name":"BadRequest","data":{"message","kind"}}.
type badRequest struct {
	kind    string
	message string
}

func (e *badRequest) Error() string { return e.message }

func newBadRequest(kind, format string, args ...any) error {
	return &badRequest{kind: kind, message: fmt.Sprintf(format, args...)}
}

// statusError is any other error with an HTTP status and an OpenCode
// NamedError body {"name", "data":{"message"}}.
type statusError struct {
	status  int
	name    string
	message string
}

func (e *statusError) Error() string { return e.message }

var (
	errShuttingDown = &statusError{http.StatusServiceUnavailable, "ServiceUnavailable", ask.ErrShuttingDown.Error()}
	errKeyInFlight  = &statusError{http.StatusConflict, "Conflict", ask.ErrKeyInFlight.Error()}
	errKeyReused    = &statusError{http.StatusUnprocessableEntity, "UnprocessableContent", ask.ErrKeyReused.Error()}
)

// httpError is the one place the service's domain errors become this
// package's HTTP errors; writeError, writeRPCError and toolError each start
// with it. Other errors pass unchanged.
func httpError(err error) error {
	var (
		limit   *ask.LimitError
		refused *ask.ForbiddenError
		sess    *ask.SessionError
	)
	switch {
	case errors.Is(err, ask.ErrShuttingDown):
		return errShuttingDown
	case errors.Is(err, ask.ErrKeyInFlight):
		return errKeyInFlight
	case errors.Is(err, ask.ErrKeyReused):
		return errKeyReused
	case errors.As(err, &limit):
		return tooMany(limit.Message)
	case errors.As(err, &refused):
		return &statusError{http.StatusForbidden, "Forbidden", refused.Message}
	case errors.As(err, &sess):
		return sessionError(sess.Err, sess.ID)
	}
	return err
}

// unsupportedMediaType is a body that is not JSON. On OpenCode's routes it is
// answered exactly as OpenCode does (415, text/plain); on questiond's own
// (own), in questiond's JSON error shape, saying which header to send: the
// usual cause is `curl -d` without -H 'Content-Type: application/json'.
type unsupportedMediaType struct {
	contentType string
	own         bool
}

func (e *unsupportedMediaType) Error() string { return "Unsupported content-type: " + e.contentType }

// onOwnRoute marks a 415 as one of questiond's own routes'.
func onOwnRoute(err error) error {
	var media *unsupportedMediaType
	if errors.As(err, &media) {
		return &unsupportedMediaType{contentType: media.contentType, own: true}
	}
	return err
}

type namedError struct {
	Name string         `json:"name"`
	Data namedErrorData `json:"data"`
}

type namedErrorData struct {
	Message string `json:"message"`
	Kind    string `json:"kind,omitempty"`
	Ref     string `json:"ref,omitempty"`
	// RequestID names the question a QuestionGoneError is about.
	RequestID string `json:"requestID,omitempty"`
}

type questionNotFound struct {
	Tag       string `json:"_tag"`
	RequestID string `json:"requestID"`
	Message   string `json:"message"`
}

// writeError is the one place an error becomes an HTTP response. Errors it does
// not know are logged with a reference and answered with OpenCode's generic 500,
// so internal details never reach a client.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	err = httpError(err)
	var (
		bad      *badRequest
		status   *statusError
		media    *unsupportedMediaType
		tooLarge *http.MaxBytesError
		schema   *elicit.SchemaError
		answer   *elicit.AnswerError
		missing  *notFound
		gone     *ask.KeyGoneError // a retry whose key's question is forgotten: its result is lost, and asking again would ask twice
		budget   *pending.BudgetError
	)
	switch {
	case errors.As(err, &missing) || errors.Is(err, pending.ErrNotFound):
		id := ""
		if missing != nil {
			id = missing.id
		}
		writeJSON(w, http.StatusNotFound, questionNotFound{
			Tag: "QuestionNotFoundError", RequestID: id, Message: "Question request not found: " + id,
		})
	case errors.As(err, &gone):
		writeJSON(w, http.StatusGone, namedError{"QuestionGoneError", namedErrorData{Message: gone.Error(), RequestID: gone.ID}})
	case errors.As(err, &budget):
		writeStatus(w, budgetRefusal(budget))
	case errors.As(err, &bad):
		writeJSON(w, http.StatusBadRequest, namedError{"BadRequest", namedErrorData{Message: bad.message, Kind: bad.kind}})
	case errors.As(err, &schema), errors.As(err, &answer):
		writeJSON(w, http.StatusBadRequest, namedError{"BadRequest", namedErrorData{Message: err.Error(), Kind: kindPayload}})
	case errors.As(err, &tooLarge):
		writeJSON(w, http.StatusRequestEntityTooLarge, namedError{"PayloadTooLarge", namedErrorData{
			Message: fmt.Sprintf("request body is larger than %d bytes", tooLarge.Limit)}})
	case errors.As(err, &media) && media.own:
		writeJSON(w, http.StatusUnsupportedMediaType, namedError{"UnsupportedMediaType", namedErrorData{Kind: kindHeaders, Message: fmt.Sprintf(
			"the body must be JSON sent with Content-Type: application/json, not %q (with curl: -H 'Content-Type: application/json')\n  at [\"Content-Type\"]", media.contentType)}})
	case errors.As(err, &media):
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		_, _ = w.Write([]byte(media.Error()))
	case errors.As(err, &status):
		writeStatus(w, status)
	case errors.As(err, new(sessionsUnavailableError)):
		ref := errorRef()
		s.log.Error("session records failed", zap.String("ref", ref), zap.String("method", r.Method),
			zap.String("path", r.URL.Path), zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, namedError{"ServiceUnavailable", namedErrorData{
			Message: "Session records are unavailable; nothing was changed. Try again later.", Ref: ref}})
	case errors.Is(err, pending.ErrFull):
		// A limit another replica's creations reached first (see checkPending).
		writeStatus(w, &statusError{http.StatusTooManyRequests, "TooManyRequests",
			"questiond holds as many pending questions as its limits allow; try again once some are answered"})
	case errors.Is(err, pending.ErrUnavailable):
		ref := errorRef()
		s.log.Error("question store failed", zap.String("ref", ref), zap.String("method", r.Method),
			zap.String("path", r.URL.Path), zap.Error(err))
		writeJSON(w, http.StatusServiceUnavailable, namedError{"ServiceUnavailable", namedErrorData{
			Message: "The question store is unavailable; nothing was changed. Try again later.", Ref: ref}})
	case errors.Is(err, pending.ErrClosed):
		writeStatus(w, errShuttingDown)
	default:
		ref := errorRef()
		s.log.Error("request failed", zap.String("ref", ref), zap.String("method", r.Method),
			zap.String("path", r.URL.Path), zap.Error(err))
		writeJSON(w, http.StatusInternalServerError, namedError{"UnknownError", namedErrorData{
			Message: "Unexpected server error. Check server logs for details.", Ref: ref}})
	}
}

// writeStatus answers with e's status and OpenCode's NamedError body. It is
// writeError's for the middleware that refuses a request before any handler
// runs (host guard, CORS, authentication, rate limit), where there is
// nothing to log.
func writeStatus(w http.ResponseWriter, e *statusError) {
	writeJSON(w, e.status, namedError{e.name, namedErrorData{Message: e.message}})
}

// notFound names the question id a 404 is about.
type notFound struct{ id string }

func (e *notFound) Error() string { return "question not found: " + e.id }

func errorRef() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "err_" + hex.EncodeToString(b[:])
}

// writeJSON writes v as compact JSON with OpenCode's headers.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshalJSON(v)
	if err != nil {
		// Every value we write is made of plain structs, maps and slices; a
		// failure here is a programming error worth a loud 500.
		body, status = unencodableBody, http.StatusInternalServerError
	}
	writeJSONBytes(w, status, body)
}

// unencodableBody answers a request whose answer could not be encoded.
var unencodableBody = []byte(`{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details."}}`)

// writeJSONBytes writes body, which is JSON already.
func writeJSONBytes(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshalJSON is json.Marshal without its HTML escaping: OpenCode (in
// JavaScript) sends <, > and & as they are, and "\u003c" in an error message
// about a pattern is unreadable. Bodies are application/json, never HTML.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
