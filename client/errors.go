package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Error is an error answered by questiond, decoded from its JSON body:
// {"name","data":{"message","kind"}}, or {"_tag":"QuestionNotFoundError",…}
// for unknown questions. Match it with errors.Is against the Err sentinels,
// or read it with errors.As.
type Error struct {
	Status  int    // the HTTP status
	Name    string // "BadRequest", "QuestionNotFoundError", "Unauthorized", "Forbidden", "TooManyRequests", "ServiceUnavailable", …
	Kind    string // what part of the request a BadRequest is about, e.g. "Payload"
	Message string // the server's own explanation
	// RequestID is the elicitation a QuestionGoneError (410) is about.
	RequestID string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "questiond: %d %s", e.Status, e.Name)
	if e.Kind != "" {
		fmt.Fprintf(&b, " (%s)", e.Kind)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Is reports whether target is the sentinel of e's status or name, so
// errors.Is(err, ErrNotFound) holds for any questiond 404.
func (e *Error) Is(target error) bool {
	s, ok := target.(*sentinel)
	if !ok {
		return false
	}
	for _, row := range errorTable {
		if row.sentinel == s {
			return e.Status == row.status || row.hasName(e.Name)
		}
	}
	return false
}

// sentinel is a class of questiond errors; an *Error matches it by status or name.
type sentinel struct{ text string }

func (s *sentinel) Error() string { return s.text }

// Sentinels, matched with errors.Is against an *Error by its status or name.
var (
	// ErrBadRequest: the request was refused as invalid (400), e.g. a schema
	// outside the MCP subset; the Error's Message says what and where.
	ErrBadRequest error = &sentinel{"questiond: bad request"}
	// ErrNotFound: no such elicitation (404): never created, another agent's,
	// or ended longer ago than the server's retention; or, for
	// DeleteSession, a session nobody set.
	ErrNotFound error = &sentinel{"questiond: not found"}
	// ErrUnauthorized: agent tokens are configured and the request had none
	// or a wrong one (401).
	ErrUnauthorized error = &sentinel{"questiond: unauthorized"}
	// ErrForbidden: the session may not ask (its question capability is
	// "none"), the session is set by another agent, the credentials belong
	// to the operator role, or the request came from a refused browser
	// origin (403). The Error's Message says which.
	ErrForbidden error = &sentinel{"questiond: forbidden"}
	// ErrConflict: a create with the same Idempotency-Key is still being
	// created (409); Elicit sends it again after a moment.
	ErrConflict error = &sentinel{"questiond: conflict"}
	// ErrKeyReused: the Idempotency-Key was already used for a different
	// request (422).
	ErrKeyReused error = &sentinel{"questiond: idempotency key reused"}
	// ErrQuestionGone: the create's Idempotency-Key asked a question whose
	// result the server has forgotten (past its retention, or evicted by
	// its bounds on retained results): the human's answer is lost, and
	// nothing was asked again (410 QuestionGoneError; Error.RequestID names
	// the question). Ask again with a new key, which Elicit and Create make
	// for every call.
	ErrQuestionGone error = &sentinel{"questiond: question gone"}
	// ErrTooMany: over the request rate, too many pending questions, or
	// beyond a byte budget (429).
	ErrTooMany error = &sentinel{"questiond: too many requests"}
	// ErrUnavailable: questiond is shutting down or its store failed; nothing
	// was changed (503).
	ErrUnavailable error = &sentinel{"questiond: service unavailable"}
	// ErrUnreachable: questiond was never reached within
	// Options.GiveUpUnreached (no question was created). It wraps the last
	// connection error.
	ErrUnreachable error = &sentinel{"questiond: unreachable"}
)

// errorClass is one row of the error table: a status, the names questiond
// gives it, and the sentinel it matches (nil: none).
type errorClass struct {
	status   int
	names    []string
	sentinel *sentinel
}

func (c errorClass) hasName(name string) bool {
	for _, n := range c.names {
		if n == name {
			return true
		}
	}
	return false
}

// errorTable maps statuses to the names questiond gives them (the server's
// internal/httpapi/errors.go read the other way round), and to the sentinel
// they match. A 404 is QuestionNotFoundError for an unknown elicitation and
// NotFoundError for an unknown route.
var errorTable = []errorClass{
	{http.StatusBadRequest, []string{"BadRequest"}, ErrBadRequest.(*sentinel)},
	{http.StatusUnauthorized, []string{"Unauthorized"}, ErrUnauthorized.(*sentinel)},
	{http.StatusForbidden, []string{"Forbidden"}, ErrForbidden.(*sentinel)},
	{http.StatusNotFound, []string{"QuestionNotFoundError", "NotFoundError"}, ErrNotFound.(*sentinel)},
	{http.StatusMethodNotAllowed, []string{"MethodNotAllowed"}, nil},
	{http.StatusConflict, []string{"Conflict"}, ErrConflict.(*sentinel)},
	{http.StatusGone, []string{"QuestionGoneError"}, ErrQuestionGone.(*sentinel)},
	{http.StatusRequestEntityTooLarge, []string{"PayloadTooLarge"}, nil},
	{http.StatusUnsupportedMediaType, []string{"UnsupportedMediaType"}, nil},
	{http.StatusMisdirectedRequest, []string{"MisdirectedRequest"}, nil},
	{http.StatusUnprocessableEntity, []string{"UnprocessableContent"}, ErrKeyReused.(*sentinel)},
	{http.StatusTooManyRequests, []string{"TooManyRequests"}, ErrTooMany.(*sentinel)},
	{http.StatusInternalServerError, []string{"UnknownError"}, nil},
	{http.StatusServiceUnavailable, []string{"ServiceUnavailable"}, ErrUnavailable.(*sentinel)},
}

// nameOf is the name questiond gives status, for bodies that carry none
// (an operator-style 401, a plain-text 415, a proxy's HTML error page).
func nameOf(status int) string {
	for _, c := range errorTable {
		if c.status == status {
			return c.names[0]
		}
	}
	return http.StatusText(status)
}

// maxErrorBody bounds how much of an error body is read.
const maxErrorBody = 64 << 10

// decodeError builds the *Error of a non-2xx response from its body.
func decodeError(status int, body []byte) *Error {
	e := &Error{Status: status}
	var named struct {
		Name string `json:"name"`
		Data struct {
			Message   string `json:"message"`
			Kind      string `json:"kind"`
			RequestID string `json:"requestID"`
		} `json:"data"`
		Tag     string `json:"_tag"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &named) == nil {
		switch {
		case named.Tag != "":
			e.Name, e.Message = named.Tag, named.Message
		case named.Name != "":
			e.Name, e.Message, e.Kind, e.RequestID = named.Name, named.Data.Message, named.Data.Kind, named.Data.RequestID
		}
	}
	if e.Name == "" {
		e.Name = nameOf(status)
		if text := strings.TrimSpace(string(body)); text != "" && !strings.HasPrefix(text, "<") && len(text) <= 1024 {
			e.Message = text
		}
	}
	return e
}
