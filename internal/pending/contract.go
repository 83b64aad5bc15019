package pending

// CONTRACT FILE — the exported API that the rest of questiond codes against.
// The implementation replaces the stub bodies (and may move declarations into
// files grouped by what they do); names, signatures and documented behaviour stay.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/elicit"
)

// Sentinel errors; every returned error wraps one of them with %w and the id.
var (
	// ErrNotFound: no such question, or it has already ended (for Settle), or
	// its result is past retention (for Get and Wait).
	ErrNotFound = errors.New("question not found")
	// ErrExists: Create was given an id the store already holds.
	ErrExists = errors.New("question already exists")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store closed")
)

// Tool is OpenCode's QuestionTool: the assistant message and tool call a
// question belongs to.
type Tool struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

// Result is an MCP ElicitResult.
type Result struct {
	Action  string         `json:"action"` // accept | decline | cancel
	Content elicit.Content `json:"content,omitempty"`
}

// MCP ElicitResult actions.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Ending says how a question ended.
type Ending string

// Every way a question can end.
const (
	EndReplied      Ending = "replied"      // the operator answered (accept)
	EndRejected     Ending = "rejected"     // the operator dismissed it (cancel or decline)
	EndTimeout      Ending = "timeout"      // its deadline passed (cancel)
	EndWithdrawn    Ending = "withdrawn"    // the agent withdrew it (cancel)
	EndDisconnected Ending = "disconnected" // the agent's waiting connection went away (cancel)
	EndShutdown     Ending = "shutdown"     // the daemon stopped (cancel)
)

// Outcome is how and when a question ended.
type Outcome struct {
	Ending  Ending     `json:"ending"`
	Result  Result     `json:"result"`
	Answers [][]string `json:"answers,omitempty"` // the operator's raw answers, for EndReplied
	At      time.Time  `json:"at"`                // set by the store when zero
}

// Question is one elicitation held by the store: pending until Ended is set.
// The store hands out copies; callers may read them freely and must not
// modify the slices they share.
type Question struct {
	ID        string                `json:"id"`
	SessionID string                `json:"sessionID"`
	Directory string                `json:"directory,omitempty"`
	Owner     string                `json:"owner,omitempty"` // the agent that asked
	Message   string                `json:"message"`
	Schema    json.RawMessage       `json:"requestedSchema"`
	Questions []elicit.QuestionInfo `json:"questions"`
	Tool      *Tool                 `json:"tool,omitempty"`
	CreatedAt time.Time             `json:"createdAt"`
	Deadline  time.Time             `json:"deadline,omitzero"` // zero: no timeout
	Ended     *Outcome              `json:"ended,omitempty"`

	// Form is the parsed elicitation; nil when the record was loaded from
	// somewhere that does not keep it (rebuild with elicit.NewForm).
	Form *elicit.Form `json:"-"`
}

// Filter selects pending questions for List. Empty fields match everything.
type Filter struct {
	// Directory scopes the list the way OpenCode clients expect: a question
	// created with directory D is listed for D and for callers that give no
	// directory; a question created without one is listed for every caller.
	Directory string
	SessionID string
	Owner     string
}

// Matches reports whether q passes f.
func (f Filter) Matches(q *Question) bool { panic("unimplemented") }

// MemoryOptions configure a Memory store. Zero values mean the defaults.
type MemoryOptions struct {
	// Retention is how long an ended question stays readable through Get and
	// Wait, so an agent that reconnects can still collect its result. Default 1h.
	Retention time.Duration
	// OnEnd is called exactly once for every question that ends, with the
	// ended copy, after the store's locks are released, in the goroutine that
	// settled it (a timer goroutine for timeouts). Settle returns only after
	// OnEnd has returned, so an operator's "200 true" follows the event.
	OnEnd func(*Question)
	// Logger gets debug and warning lines; nil means zap.NewNop().
	Logger *zap.Logger
}

// Memory is the in-process store: a map of entries whose futures are channels.
type Memory struct{}

// NewMemory returns an empty store.
func NewMemory(opts MemoryOptions) *Memory { panic("unimplemented") }

// Create stores a new pending question (q.ID must be set and unused) and, if
// q.Deadline is set, arms its timeout, which ends it with EndTimeout/cancel.
func (m *Memory) Create(ctx context.Context, q *Question) error { panic("unimplemented") }

// Get returns a pending or retained ended question.
func (m *Memory) Get(ctx context.Context, id string) (*Question, error) { panic("unimplemented") }

// List returns the pending questions that match f, oldest first.
func (m *Memory) List(ctx context.Context, f Filter) ([]*Question, error) { panic("unimplemented") }

// Settle ends a pending question with o. The first ending wins; every later
// one gets ErrNotFound. It returns the ended copy.
func (m *Memory) Settle(ctx context.Context, id string, o Outcome) (*Question, error) {
	panic("unimplemented")
}

// Wait blocks until the question has ended and returns the ended copy, or
// returns ctx's error (wrapped) when ctx ends first; a caller giving up never
// ends the question.
func (m *Memory) Wait(ctx context.Context, id string) (*Question, error) { panic("unimplemented") }

// SettleAll ends every pending question with o (shutdown of a store that
// cannot keep them) and returns the ended copies.
func (m *Memory) SettleAll(ctx context.Context, o Outcome) ([]*Question, error) {
	panic("unimplemented")
}

// Close stops timers and background work without ending any question;
// later calls return ErrClosed.
func (m *Memory) Close(ctx context.Context) error { panic("unimplemented") }
