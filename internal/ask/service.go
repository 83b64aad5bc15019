package ask

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

// QuestionStore is what the service needs of the question store. Every ability is
// part of it, so a wrapper (fault injection, counting) passes on each of
// them or does not compile: none is found by type assertion, where a
// wrapper would silently turn it off.
type QuestionStore interface {
	Create(ctx context.Context, q *pending.Question) error
	Get(ctx context.Context, id string) (*pending.Question, error)
	List(ctx context.Context, f pending.Filter) ([]*pending.Question, error)
	// Count counts without copying, for the limits on pending questions.
	Count(ctx context.Context, f pending.Filter) (int, error)
	Settle(ctx context.Context, id string, o pending.Outcome) (*pending.Question, error)
	Wait(ctx context.Context, id string) (*pending.Question, error)
	// FindKey returns owner's live question asked with Idempotency-Key key,
	// or an error wrapping pending.ErrNotFound, or a *pending.KeyGoneError
	// for a key whose question has been forgotten.
	FindKey(ctx context.Context, owner, key string) (*pending.Question, error)
	// PendingVersion changes whenever a question joins or leaves the
	// pending list: read before two Lists (without Filter.Ended), the same
	// version means the same pending questions, so an adapter may keep what
	// it made of the first (httpapi keeps GET /question's body). A store
	// that keeps no such version returns a new value on every call (an
	// atomic counter), which keeps nothing.
	PendingVersion() uint64
	// Peek is Get without waiting for changes made elsewhere (a replica's
	// Get may catch up with the others on a miss): what the store holds
	// now, for readers that must not wait, such as the console under its
	// lock. A store that never waits answers it as Get.
	Peek(ctx context.Context, id string) (*pending.Question, error)
	// Ping says whether the store can serve now, for readiness probes: nil
	// when it and its journal answer. A store with nothing to ask returns
	// nil until it is closed.
	Ping(ctx context.Context) error
}

// SharedWaits is what a store shared by several replicas offers so that a
// retry taken by one replica keeps another from withdrawing the question:
// Attached records that a keyed caller waits on id here; AttachedWithin
// reports whether one did anywhere within the last d (d is the time since
// this replica's own caller attached, so only later attaches count).
type SharedWaits interface {
	Attached(ctx context.Context, id string)
	AttachedWithin(ctx context.Context, id string, d time.Duration) bool
}

// Defaults for Options.
const (
	DefaultReconnectGrace     = time.Minute
	DefaultMaxPending         = 10000
	DefaultMaxPendingPerAgent = 1000
)

// Names of the limits a LimitError names.
const (
	LimitPending         = "pending"           // Options.MaxPending
	LimitPendingPerAgent = "pending_per_agent" // Options.MaxPendingPerAgent
)

// Options configure a Service. Zero values mean the defaults, except for
// the limits, where zero means none.
type Options struct {
	Logger *zap.Logger
	// Elicit tunes schema parsing and question building.
	Elicit elicit.Options
	// ReconnectGrace is how long a keyed waiter whose connection dropped
	// keeps its question pending for a retry with the same key, before the
	// question is withdrawn. Default DefaultReconnectGrace.
	ReconnectGrace time.Duration
	// MaxPending bounds the pending questions in total, MaxPendingPerAgent
	// those of one agent (never the anonymous one's); zero: no limit.
	MaxPending, MaxPendingPerAgent int
	// Agents are the names of the agents with tokens; their inboxes (see
	// Inbox) are theirs alone. Without any, every agent is anonymous and
	// shares one inbox.
	Agents []string
	// SharedWaits, for a store shared by several replicas, lets a retry
	// taken by another replica keep this one from withdrawing its
	// question; nil: this replica's waiters are the only ones.
	SharedWaits SharedWaits
	// OnRefused hears of every question a limit refused, by the limit's
	// name; nil: nobody does.
	OnRefused func(limit string)
	// Hosted, when questiond stands in front of another server, files
	// questions asked in that server's sessions where its clients show
	// them; nil: every session is questiond's.
	Hosted Hosted
}

// Service is the question's life: one per daemon, shared by every
// protocol's adapter.
type Service struct {
	store    QuestionStore
	sessions session.Records
	announce *Announcements
	opts     Options
	log      *zap.Logger
	inboxes  map[string]string // inbox session id → its agent (see inbox.go)

	draining atomic.Bool
	creating atomic.Int64 // questions being created right now, for the pending limits
	// Doors a shutdown closes and waits at: questions being created (Drain
	// closes it), calls that withdraw their question on Release, and
	// endings (Release closes those).
	creates, calls, endings *Door
	claims                  keyClaims  // Idempotency-Keys being created
	graces                  graceWaits // keyed waiters, for ReconnectGrace
	// lifetime ends on Release: waits still under way let go.
	lifetime context.Context
	release  context.CancelFunc
	released []releaseHook

	// Test hooks, always nil in production (see export_test.go).
	onKeyClaimed   func(key string)
	onGraceArmed   func(id string)
	beforeWithdraw func(id string)
}

// New returns the service for store, whose sessions decide where questions
// go (nil: an in-memory registry where every session may ask the operator)
// and which tells announce of every question it asks (announce.Ended must
// be the store's OnEnd).
func New(store QuestionStore, sessions session.Records, announce *Announcements, opts Options) (*Service, error) {
	if store == nil || announce == nil {
		return nil, errors.New("ask: a store and its announcements are required")
	}
	if sessions == nil {
		registry, err := session.Open(context.Background(), session.Options{})
		if err != nil {
			return nil, fmt.Errorf("ask: %w", err)
		}
		sessions = registry
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.ReconnectGrace <= 0 {
		opts.ReconnectGrace = DefaultReconnectGrace
	}
	s := &Service{store: store, sessions: sessions, announce: announce, opts: opts, log: opts.Logger.Named("ask"),
		inboxes: inboxOwners(opts.Agents), creates: NewDoor(), calls: NewDoor(), endings: NewDoor()}
	s.lifetime, s.release = context.WithCancel(context.Background())
	return s, nil
}

// Store returns the store the service keeps questions in, for adapters'
// reads (listing, a question's form).
func (s *Service) Store() QuestionStore { return s.store }

// Sessions returns the session registry the service routes by.
func (s *Service) Sessions() session.Records { return s.sessions }

// Draining reports whether Drain has been called: new questions are refused.
func (s *Service) Draining() bool { return s.draining.Load() }

// Released reports whether Release has been called.
func (s *Service) Released() bool { return s.lifetime.Err() != nil }

// UntilReleased returns a context that also ends on Release.
func (s *Service) UntilReleased(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := context.AfterFunc(s.lifetime, cancel)
	return ctx, func() { stop(); cancel() }
}

// The stores the daemon asks through have every ability QuestionStore
// names (pgstore's Mirror embeds a pending.Store).
var _ QuestionStore = (*pending.Store)(nil)
