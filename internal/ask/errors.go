package ask

import (
	"errors"
	"fmt"
)

// Domain errors. Each protocol maps them once: HTTP to its statuses and
// bodies, JSON-RPC to error objects, MCP to tool errors. Errors of the
// packages below (pending.ErrNotFound and the other pending errors,
// pending.BudgetError, session's, elicit.SchemaError and AnswerError) pass
// through unchanged, wrapped with context.
var (
	// ErrShuttingDown: a shutdown has closed the door this operation needs.
	ErrShuttingDown = errors.New("questiond is shutting down")
	// ErrKeyInFlight: a request with the same Idempotency-Key is still being
	// created.
	ErrKeyInFlight = errors.New("A request with the same Idempotency-Key is still being created; send it again in a moment")
	// ErrKeyReused: the Idempotency-Key was used for a different request.
	ErrKeyReused = errors.New("The Idempotency-Key was already used for a different request; use a new key for a new request")
)

// KeyGoneError: the question an Idempotency-Key asked has ended and its
// result is no longer kept; nothing was asked again.
type KeyGoneError struct{ ID string }

func (e *KeyGoneError) Error() string {
	return "The question this Idempotency-Key asked (" + e.ID + ") has ended and its result is no longer kept (--retention, --max-retained); nothing was asked again. Send a new request with a new key to ask again."
}

// IsKeyError reports whether err is about the Idempotency-Key rather than
// the question asked.
func IsKeyError(err error) bool {
	return errors.Is(err, ErrKeyInFlight) || errors.Is(err, ErrKeyReused) || errors.As(err, new(*KeyGoneError))
}

// LimitError: a limit on pending questions refused a new one. Limit names
// it (LimitPending, LimitPendingPerAgent).
type LimitError struct {
	Limit   string
	Message string
}

func (e *LimitError) Error() string { return e.Message }

// ForbiddenError: the caller may not ask where it asked (another agent's
// inbox, an inbox as parent, a session whose capability refuses).
type ForbiddenError struct{ Message string }

func (e *ForbiddenError) Error() string { return e.Message }

func forbidden(format string, args ...any) error {
	return &ForbiddenError{Message: fmt.Sprintf(format, args...)}
}
