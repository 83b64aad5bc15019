package pending

import "errors"

// Sentinel errors; every returned error wraps one of them (or a context
// error, for Wait) with %w and the question id.
var (
	// ErrNotFound: no such question, or it has already ended (for Settle), or
	// its result is past retention or was evicted by the MaxRetained bound
	// (for Get and Wait).
	ErrNotFound = errors.New("question not found")
	// ErrExists: Create was given an id the store already holds.
	ErrExists = errors.New("question already exists")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store closed")
	// ErrInvalid: Create was given a question it cannot hold (nil, without
	// an id, or already ended).
	ErrInvalid = errors.New("invalid question")
	// ErrFull: a journal shared by several replicas refused a creation
	// beyond a limit on pending questions that it enforces for all of them.
	ErrFull = errors.New("too many pending questions")
	// ErrGone: an Idempotency-Key names a question whose result has been
	// forgotten (FindKey; see KeyGoneError).
	ErrGone = errors.New("the question's result is gone")
	// ErrOverBudget: Create would take an agent, or the store, beyond its
	// byte budget (see BudgetError).
	ErrOverBudget = errors.New("over the byte budget")
)
