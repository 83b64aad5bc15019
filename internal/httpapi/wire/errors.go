package wire

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
	KindParams  = "Params"
	KindQuery   = "Query"
	KindHeaders = "Headers"
	KindPayload = "Payload"
)

// BadRequest is a client error that becomes OpenCode's 400 body
// {"name":"BadRequest","data":{"message","kind"}}.
type BadRequest struct {
	Kind    string // one of the Kind* constants
	Message string
}

func (e *BadRequest) Error() string { return e.Message }

// NewBadRequest is a BadRequest of kind with a formatted message.
func NewBadRequest(kind, format string, args ...any) error {
	return &BadRequest{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// StatusError is any other error with an HTTP status and an OpenCode
// NamedError body {"name", "data":{"message"}}.
type StatusError struct {
	Status  int
	Name    string
	Message string
}

func (e *StatusError) Error() string { return e.Message }

// NewStatus is a StatusError: status, OpenCode's error name, and message.
func NewStatus(status int, name, message string) *StatusError {
	return &StatusError{Status: status, Name: name, Message: message}
}

// ErrShuttingDown is the 503 of a request questiond refuses because it is
// shutting down.
var ErrShuttingDown = NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable", ask.ErrShuttingDown.Error())

var (
	errKeyInFlight = NewStatus(http.StatusConflict, "Conflict", ask.ErrKeyInFlight.Error())
	errKeyReused   = NewStatus(http.StatusUnprocessableEntity, "UnprocessableContent", ask.ErrKeyReused.Error())
)

// HTTPError is the one place the service's domain errors become this
// package's HTTP errors; writeError, writeRPCError and toolError each start
// with it. Other errors pass unchanged.
func HTTPError(err error) error {
	var (
		limit   *ask.LimitError
		refused *ask.ForbiddenError
		sess    *ask.SessionError
		hosted  *ask.HostedError
	)
	switch {
	case errors.Is(err, ask.ErrShuttingDown):
		return ErrShuttingDown
	case errors.Is(err, ask.ErrKeyInFlight):
		return errKeyInFlight
	case errors.Is(err, ask.ErrKeyReused):
		return errKeyReused
	case errors.As(err, &limit):
		return TooMany(limit.Message)
	case errors.As(err, &refused):
		return NewStatus(http.StatusForbidden, "Forbidden", refused.Message)
	case errors.As(err, &sess):
		return SessionError(sess.Err, sess.ID)
	case errors.As(err, &hosted):
		return NewStatus(http.StatusBadGateway, "BadGateway", hosted.Error())
	}
	return err
}

// UnsupportedMediaType is a body that is not JSON. On OpenCode's routes it is
// answered exactly as OpenCode does (415, text/plain); on questiond's own
// (own), in questiond's JSON error shape, saying which header to send: the
// usual cause is `curl -d` without -H 'Content-Type: application/json'.
type UnsupportedMediaType struct {
	ContentType string
	Own         bool
}

func (e *UnsupportedMediaType) Error() string { return "Unsupported content-type: " + e.ContentType }

// OnOwnRoute marks a 415 as one of questiond's own routes'.
func OnOwnRoute(err error) error {
	var media *UnsupportedMediaType
	if errors.As(err, &media) {
		return &UnsupportedMediaType{ContentType: media.ContentType, Own: true}
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

// WriteError is the one place an error becomes an HTTP response. Errors it does
// not know are logged to log with a reference and answered with OpenCode's
// generic 500, so internal details never reach a client.
func WriteError(log *zap.Logger, w http.ResponseWriter, r *http.Request, err error) {
	err = HTTPError(err)
	var (
		bad      *BadRequest
		status   *StatusError
		media    *UnsupportedMediaType
		tooLarge *http.MaxBytesError
		schema   *elicit.SchemaError
		answer   *elicit.AnswerError
		missing  *NotFound
		gone     *ask.KeyGoneError // a retry whose key's question is forgotten: its result is lost, and asking again would ask twice
		budget   *pending.BudgetError
	)
	switch {
	case errors.As(err, &missing) || errors.Is(err, pending.ErrNotFound):
		id := ""
		if missing != nil {
			id = missing.ID
		}
		WriteJSON(w, http.StatusNotFound, questionNotFound{
			Tag: "QuestionNotFoundError", RequestID: id, Message: "Question request not found: " + id,
		})
	case errors.As(err, &gone):
		WriteJSON(w, http.StatusGone, namedError{"QuestionGoneError", namedErrorData{Message: gone.Error(), RequestID: gone.ID}})
	case errors.As(err, &budget):
		WriteStatus(w, budgetRefusal(budget))
	case errors.As(err, &bad):
		WriteJSON(w, http.StatusBadRequest, namedError{"BadRequest", namedErrorData{Message: bad.Message, Kind: bad.Kind}})
	case errors.As(err, &schema), errors.As(err, &answer):
		WriteJSON(w, http.StatusBadRequest, namedError{"BadRequest", namedErrorData{Message: err.Error(), Kind: KindPayload}})
	case errors.As(err, &tooLarge):
		WriteJSON(w, http.StatusRequestEntityTooLarge, namedError{"PayloadTooLarge", namedErrorData{
			Message: fmt.Sprintf("request body is larger than %d bytes", tooLarge.Limit)}})
	case errors.As(err, &media) && media.Own:
		WriteJSON(w, http.StatusUnsupportedMediaType, namedError{"UnsupportedMediaType", namedErrorData{Kind: KindHeaders, Message: fmt.Sprintf(
			"the body must be JSON sent with Content-Type: application/json, not %q (with curl: -H 'Content-Type: application/json')\n  at [\"Content-Type\"]", media.ContentType)}})
	case errors.As(err, &media):
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		_, _ = w.Write([]byte(media.Error()))
	case errors.As(err, &status):
		WriteStatus(w, status)
	case errors.As(err, new(SessionsUnavailableError)):
		ref := logFailure(log, r, "session records failed", err)
		WriteJSON(w, http.StatusServiceUnavailable, namedError{"ServiceUnavailable", namedErrorData{
			Message: unavailable("Session records are", "session records", err), Ref: ref}})
	case errors.Is(err, pending.ErrFull):
		// A limit another replica's creations reached first (see checkPending).
		WriteStatus(w, NewStatus(http.StatusTooManyRequests, "TooManyRequests",
			"questiond holds as many pending questions as its limits allow; try again once some are answered"))
	case errors.Is(err, pending.ErrUnavailable):
		ref := logFailure(log, r, "question store failed", err)
		WriteJSON(w, http.StatusServiceUnavailable, namedError{"ServiceUnavailable", namedErrorData{
			Message: unavailable("The question store is", "questions", err), Ref: ref}})
	case errors.Is(err, pending.ErrClosed):
		WriteStatus(w, ErrShuttingDown)
	default:
		ref := logFailure(log, r, "request failed", err)
		WriteJSON(w, http.StatusInternalServerError, namedError{"UnknownError", namedErrorData{
			Message: "Unexpected server error. Check server logs for details.", Ref: ref}})
	}
}

// WriteStatus answers with e's status and OpenCode's NamedError body. It is
// WriteError's for the middleware that refuses a request before any handler
// runs (host guard, CORS, authentication, rate limit), where there is
// nothing to log.
func WriteStatus(w http.ResponseWriter, e *StatusError) {
	WriteJSON(w, e.Status, namedError{e.Name, namedErrorData{Message: e.Message}})
}

// NotFound names the question id a 404 is about.
type NotFound struct{ ID string }

func (e *NotFound) Error() string { return "question not found: " + e.ID }

func errorRef() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "err_" + hex.EncodeToString(b[:])
}

// WriteJSON writes v as compact JSON with OpenCode's headers.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := MarshalJSON(v)
	if err != nil {
		// Every value we write is made of plain structs, maps and slices; a
		// failure here is a programming error worth a loud 500.
		body, status = UnencodableBody, http.StatusInternalServerError
	}
	WriteJSONBytes(w, status, body)
}

// UnencodableBody answers a request whose answer could not be encoded.
var UnencodableBody = []byte(`{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details."}}`)

// WriteJSONBytes writes body, which is JSON already.
func WriteJSONBytes(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// MarshalJSON is json.Marshal without its HTML escaping: OpenCode (in
// JavaScript) sends <, > and & as they are, and "\u003c" in an error message
// about a pattern is unreadable. Bodies are application/json, never HTML.
func MarshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// unavailable is the message of a 503 for a failed store, naming the store
// when the error says which (pending.FailedStore).
func unavailable(what, records string, err error) string {
	if store := pending.FailedStore(err); store != "" {
		return store + " is unavailable, so questiond cannot read or write " + records + "; nothing was changed. Try again later."
	}
	return what + " unavailable; nothing was changed. Try again later."
}

// logFailure logs a request that failed on the server's side under a new
// reference, which the answer gives the client to quote.
func logFailure(log *zap.Logger, r *http.Request, msg string, err error) string {
	ref := errorRef()
	log.Error(msg, zap.String("ref", ref), zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
	return ref
}
