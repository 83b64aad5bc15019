package wire

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/questiond/questiond/internal/session"
)

// TooMany is a 429 with OpenCode's NamedError body.
func TooMany(message string) error {
	return NewStatus(http.StatusTooManyRequests, "TooManyRequests", message)
}

// SessionError turns a registry error into the error the client gets.
func SessionError(err error, id string) error {
	var field *session.FieldError
	var owned *session.OwnedError
	switch {
	case errors.As(err, &field):
		return NewBadRequest(KindPayload, "%s\n  at [%q]", field.Problem, field.Field)
	case errors.As(err, &owned):
		return NewStatus(http.StatusForbidden, "Forbidden", fmt.Sprintf("%s\n  at [%q]", owned.Error(), owned.Field))
	case errors.Is(err, session.ErrForbidden):
		return NewStatus(http.StatusForbidden, "Forbidden", "session "+id+" belongs to another agent; only that agent (or an operator) can change it")
	case errors.Is(err, session.ErrAgentFull):
		return NewStatus(http.StatusTooManyRequests, "TooManyRequests", "questiond keeps no more session records for this agent ("+err.Error()+"); delete sessions that have ended")
	case errors.Is(err, session.ErrNotFound):
		return NewStatus(http.StatusNotFound, "NotFoundError", "session "+id+" has no question capability set; the default applies")
	case errors.Is(err, session.ErrFull):
		return NewStatus(http.StatusTooManyRequests, "TooManyRequests", "questiond keeps no more session records ("+err.Error()+"); delete sessions that have ended")
	case errors.Is(err, session.ErrUnavailable):
		return SessionsUnavailableError{err} // the store's error names the session
	}
	return err
}

// SessionsUnavailableError marks a failed session journal, answered like a
// failed question store: 503, nothing changed.
type SessionsUnavailableError struct{ err error }

func (e SessionsUnavailableError) Error() string { return e.err.Error() }
func (e SessionsUnavailableError) Unwrap() error { return e.err }
