package pending

import (
	"container/list"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/defaults"
)

// DefaultRetention is how long an ended question stays readable when
// Options.Retention is zero.
const DefaultRetention = time.Hour

// DefaultMaxRetained is how many ended questions stay readable when
// Options.MaxRetained is zero. A retained result of a small form costs
// about 1 KiB (its prompt, schema, questions and result), so the default
// keeps them to about 10 MiB at any request rate, while covering hours of
// history at the rate people answer, and as many results as the daemon's
// default --max-pending holds questions.
const DefaultMaxRetained = 10000

// DefaultMaxRetainedPerAgent is how many ended questions of one agent stay
// readable when Options.MaxRetainedPerAgent is zero: a tenth of the total,
// so that one agent's churn leaves room for nine others' results.
const DefaultMaxRetainedPerAgent = DefaultMaxRetained / 10

// DefaultKeyRetention is how long the Idempotency-Key of a forgotten
// question is remembered when Options.KeyRetention is zero (never less
// than Retention).
const DefaultKeyRetention = 24 * time.Hour

// maxGonePerAgent bounds the forgotten questions' keys remembered for one
// agent (a few hundred bytes each); beyond it that agent's oldest goes.
const maxGonePerAgent = 20000

// Options configure a Store. Zero values mean the defaults.
type Options struct {
	// Retention is how long an ended question stays readable through Get and
	// Wait, so an agent that reconnects can still collect its result. Default 1h.
	Retention time.Duration
	// MaxRetained bounds how many ended questions are kept, so that memory
	// (and the journal) does not grow with the request rate: when one more
	// question ends, the one that ended first is forgotten at once, exactly
	// as if its retention were over. Zero or less means DefaultMaxRetained.
	MaxRetained int
	// MaxRetainedPerAgent bounds the ended questions kept for one agent
	// (Question.Owner; the unauthenticated owner "" has no bound of its
	// own): beyond it that agent's oldest result is forgotten. Beyond
	// MaxRetained, the agent holding the most results forgets its oldest,
	// so no agent's churn evicts another's results first. Zero or less
	// means DefaultMaxRetainedPerAgent.
	MaxRetainedPerAgent int
	// KeyRetention is how long the Idempotency-Key of a forgotten question
	// is remembered (FindKey answers ErrGone for it). Zero or less means
	// DefaultKeyRetention; it is never shorter than Retention.
	KeyRetention time.Duration
	// MaxBytes and MaxBytesPerAgent are byte budgets over pending and
	// retained questions (see budget.go): the store's and each agent's
	// (not the unauthenticated owner's). Zero or less means
	// DefaultMaxBytes and DefaultMaxBytesPerAgent.
	MaxBytes         int64
	MaxBytesPerAgent int64
	// OnEnd is called exactly once for every question that ends, with the
	// ended copy, after the store's locks are released, in the goroutine that
	// settled it (a timer goroutine for timeouts). Settle returns only after
	// OnEnd has returned, so an operator's "200 true" follows the event.
	OnEnd func(*Question)
	// OnObserve is called once for every change another replica made that
	// Observe applies to this store: a creation (Ended nil) or an ending,
	// outside the store's locks, in the goroutine that called Observe.
	OnObserve func(*Question)
	// Logger gets debug and warning lines; nil means zap.NewNop().
	Logger *zap.Logger
	// Journal makes the store durable: every creation and ending is
	// committed to it before it is acknowledged, and Open rebuilds the store
	// from it. Nil means nothing is persisted. A store with a journal is built
	// by Open; New panics when given one. Closing the store does not
	// close the journal: the caller closes both, the store first.
	Journal Journal
}

// Store is the pending-question store: a map of entries in this process
// whose futures are channels, durable when Open built it on a Journal (a
// bbolt file, or PostgreSQL shared by several replicas) and in memory only
// when New did.
//
// Locking has two levels. mu guards the map, the indexes and closed; each
// entry's own mutex guards its ending, so Get and Wait read an ending without
// holding mu. An ending takes mu then the entry's mutex (never the other way
// round), and no callback runs under either.
//
// Without a journal, Store never blocks except in Wait and Close, so the
// other methods accept a context only to fit backends that do I/O. With one,
// Create, Settle and SettleAll also wait for their commit, and pass ctx to
// the journal. No journal call is made under mu or an entry's mu.
type Store struct {
	retention           time.Duration
	maxRetained         int
	maxRetainedPerAgent int
	keyRetention        time.Duration
	maxGonePerAgent     int
	maxBytes            int64
	maxBytesPerAgent    int64
	onEnd               func(*Question)
	onObserve           func(*Question)
	log                 *zap.Logger
	journal             Journal // nil: nothing persisted

	mu          sync.RWMutex
	closed      bool
	entries     map[string]*entry            // pending and retained ended questions
	pending     *list.List                   // pending *entry in creation order, for List
	sessions    map[string]*sessionEntries   // the entries of each session, pending and ended
	seq         uint64                       // ticks once per entry joining pending or ended, to order a session's entries like those lists
	ended       retainedQueue                // retained ended entries in expiry order (= ending order), at most maxRetained
	evicted     []*entry                     // with a journal: entries evicted or swept whose records are still to delete
	creating    map[string]chan struct{}     // ids whose creation is being committed; closed once it is over
	keys        map[requestKey]*entry        // the live holder of each Idempotency-Key
	keying      map[requestKey]struct{}      // keys whose creation is being committed
	gone        map[requestKey]*list.Element // the remembered keys of forgotten questions (*GoneKey in goneByOwner)
	goneByOwner map[string]*list.List        // per owner, in the order forgotten (= expiry order)
	goneDropped []GoneKey                    // with a journal: remembered keys dropped, to delete at the next sweep
	bytes       int64                        // the budgets' count of every entry's weight (budget.go)
	ownerBytes  map[string]int64             // the same per owner
	sweepDone   chan struct{}                // while the janitor deletes records: closed when it is done
	sweepSoon   chan struct{}                // one token: records of evicted entries await deletion now
	sweepLater  chan struct{}                // one token: records of evicted entries await deletion within evictionDelay
	evictedSize int64                        // what the entries evicted since the last sweep were charged
	sweepTold   bool                         // the janitor was told of the entries evicted since the last sweep

	// Endings that Observe saw for ids whose creation is committing here,
	// for createDurably to apply once it has indexed the question (under mu).
	observedEndings map[string]Outcome
	// pendingVersion ticks, under mu, whenever a question joins or leaves
	// pending; PendingVersion reads it without mu.
	pendingVersion atomic.Uint64

	closing     chan struct{}  // closed by Close: wakes waiters, stops the janitor
	janitorDone chan struct{}  // closed when the janitor has returned
	timers      sync.WaitGroup // deadline callbacks that got past the closed check
	noTimeouts  bool           // StopTimeouts was called: deadlines end nothing any more (under mu)
	commits     sync.WaitGroup // journal commits of Create and endings that got past the closed check

	// Test hooks, always nil in production. They are called outside every
	// lock so a test can park one goroutine inside an operation while a rival
	// runs. Set them before the store is shared.
	onSettleEntered func(id string, how Ending) // in every ending, before any lock
	onWaitEntered   func(id string)             // in Wait, after the lookup, before blocking
}

// New returns an empty store that persists nothing. Its janitor
// goroutine runs until Close. It panics if opts.Journal is set: a durable
// store must be restored from its journal, which Open does.
func New(opts Options) *Store {
	if opts.Journal != nil {
		panic("pending: New given a Journal; use Open")
	}
	m := newStore(opts)
	go m.janitor()
	return m
}

// newStore returns an empty store whose janitor is not yet running.
func newStore(opts Options) *Store {
	m := &Store{
		retention:           opts.Retention,
		maxRetained:         opts.MaxRetained,
		maxRetainedPerAgent: opts.MaxRetainedPerAgent,
		keyRetention:        opts.KeyRetention,
		maxGonePerAgent:     maxGonePerAgent,
		maxBytes:            opts.MaxBytes,
		maxBytesPerAgent:    opts.MaxBytesPerAgent,
		gone:                make(map[requestKey]*list.Element),
		goneByOwner:         make(map[string]*list.List),
		ownerBytes:          make(map[string]int64),
		onEnd:               opts.OnEnd,
		onObserve:           opts.OnObserve,
		log:                 opts.Logger,
		journal:             opts.Journal,
		entries:             make(map[string]*entry),
		pending:             list.New(),
		sessions:            make(map[string]*sessionEntries),
		creating:            make(map[string]chan struct{}),
		sweepSoon:           make(chan struct{}, 1),
		sweepLater:          make(chan struct{}, 1),
		keys:                make(map[requestKey]*entry),
		keying:              make(map[requestKey]struct{}),
		ended:               newRetainedQueue(),
		closing:             make(chan struct{}),
		janitorDone:         make(chan struct{}),
	}
	defaults.Fill(&m.retention, DefaultRetention)
	defaults.Fill(&m.maxRetained, DefaultMaxRetained)
	defaults.Fill(&m.maxRetainedPerAgent, DefaultMaxRetainedPerAgent)
	defaults.Fill(&m.keyRetention, DefaultKeyRetention)
	m.keyRetention = max(m.keyRetention, m.retention)
	defaults.Fill(&m.maxBytes, DefaultMaxBytes)
	defaults.Fill(&m.maxBytesPerAgent, DefaultMaxBytesPerAgent)
	if m.log == nil {
		m.log = zap.NewNop()
	}
	m.log = m.log.Named("pending")
	return m
}

// Create stores a new pending question (q.ID must be set and unused) and, if
// q.Deadline is set, arms its timeout, which ends it with EndTimeout/cancel.
// The store keeps its own copy of q. A zero CreatedAt becomes now. A deadline
// already past ends the question promptly, from the timer goroutine, so OnEnd
// may run before or after Create returns.
//
// With a journal, Create returns once the question is committed; if the
// commit fails, nothing is stored and the error wraps ErrUnavailable.
func (m *Store) Create(ctx context.Context, q *Question) error {
	switch {
	case q == nil:
		return fmt.Errorf("create question: nil: %w", ErrInvalid)
	case q.ID == "":
		return fmt.Errorf("create question: empty id: %w", ErrInvalid)
	case q.Ended != nil:
		return fmt.Errorf("create question %q: already ended: %w", q.ID, ErrInvalid)
	}
	stored := cloneForStore(q)
	if stored.CreatedAt.IsZero() {
		stored.CreatedAt = time.Now()
	}
	e := newEntry(stored, m.journal != nil)
	if m.journal != nil {
		return m.createDurably(ctx, e)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return fmt.Errorf("create question %q: %w", q.ID, ErrClosed)
	}
	// An ended question past retention is forgotten, so its id is free again;
	// the janitor deletes by identity and will not remove the newcomer.
	if old, ok := m.entries[q.ID]; ok && !old.expired(time.Now()) {
		return fmt.Errorf("create question %q: %w", q.ID, ErrExists)
	}
	if m.keyTaken(q, time.Now()) {
		return fmt.Errorf("create question %q: idempotency key in use: %w", q.ID, ErrExists)
	}
	if err := m.admit(e, time.Now()); err != nil {
		return fmt.Errorf("create question %q: %w", q.ID, err)
	}
	m.index(e)
	m.logCreated(e.q)
	return nil
}

// createDurably commits e's question, then indexes it. While the commit
// runs, the id is reserved: a rival Create gets ErrExists, and Get, Wait and
// Settle do not see the question yet.
func (m *Store) createDurably(ctx context.Context, e *entry) error {
	id := e.q.ID
	if err := m.reserve(ctx, e); err != nil {
		return err
	}
	defer m.commits.Done()
	err := m.journal.Put(ctx, e.q)

	m.mu.Lock()
	close(m.creating[id])
	delete(m.creating, id)
	if k, ok := keyOf(e.q); ok {
		delete(m.keying, k)
	}
	if err == nil {
		// Even if Close has begun: it waits for this commit, and what is
		// committed must be true in memory too.
		m.index(e)
	}
	m.mu.Unlock()
	if err != nil {
		m.mu.Lock()
		delete(m.observedEndings, id)
		m.release(e)
		m.mu.Unlock()
		return fmt.Errorf("create question %q: %w", id, journalError(err))
	}
	m.logCreated(e.q)
	m.applyObservedEnding(e)
	return nil
}

// reserve claims q's id (and Idempotency-Key) for a Create about to commit
// and registers the commit with Close. An expired question whose record the
// janitor is deleting holds its id until the deletion is over, so that the
// deletion cannot land after, and erase, the newcomer's record.
func (m *Store) reserve(ctx context.Context, e *entry) error {
	q := e.q
	id := q.ID
	for {
		if !m.lockOpen() {
			return fmt.Errorf("create question %q: %w", id, ErrClosed)
		}
		_, creating := m.creating[id]
		old, held := m.entries[id]
		switch {
		case creating || held && !old.expired(time.Now()):
			m.mu.Unlock()
			return fmt.Errorf("create question %q: %w", id, ErrExists)
		case m.keyTaken(q, time.Now()):
			m.mu.Unlock()
			return fmt.Errorf("create question %q: idempotency key in use: %w", id, ErrExists)
		case held && old.sweeping:
			swept := m.sweepDone
			m.mu.Unlock()
			select {
			case <-swept:
				continue
			case <-ctx.Done():
				return fmt.Errorf("create question %q: %w", id, ctx.Err())
			}
		}
		if err := m.admit(e, time.Now()); err != nil {
			m.mu.Unlock()
			return fmt.Errorf("create question %q: %w", id, err)
		}
		m.creating[id] = make(chan struct{})
		if k, ok := keyOf(q); ok {
			m.keying[k] = struct{}{}
		}
		m.commits.Add(1)
		m.mu.Unlock()
		return nil
	}
}

// index makes e a listed pending question and arms its deadline. Callers
// hold mu for writing.
func (m *Store) index(e *entry) {
	if !e.q.Deadline.IsZero() {
		// The callback needs mu before it can touch e, so it cannot run
		// before e is fully indexed, even for a deadline in the past.
		if !m.noTimeouts {
			e.timer = time.AfterFunc(time.Until(e.q.Deadline), func() { m.timeOut(e, 0) })
		}
	}
	m.listPending(e)
	m.track(e)
}

func (m *Store) logCreated(q *Question) {
	if ce := m.log.Check(zap.DebugLevel, "question created"); ce != nil {
		ce.Write(zap.String("id", q.ID), zap.String("session", q.SessionID), zap.Time("deadline", q.Deadline))
	}
}

// Get returns a pending or retained ended question.
func (m *Store) Get(ctx context.Context, id string) (*Question, error) {
	e, err := m.lookup("get", id)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snapshot(), nil
}

// Peek is Get without waiting for changes made elsewhere: this store holds
// all it knows, so it is Get. A replica's store (pgstore.Mirror), whose Get
// catches up with the other replicas on a miss, reads only what it holds.
func (m *Store) Peek(ctx context.Context, id string) (*Question, error) { return m.Get(ctx, id) }

// Count returns how many pending questions match f (with f.Ended, and
// retained ended ones), without copying them.
func (m *Store) Count(ctx context.Context, f Filter) (int, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0, fmt.Errorf("count questions: %w", ErrClosed)
	}
	if f == (Filter{}) {
		return m.pending.Len(), nil
	}
	n := 0
	for el := m.pending.Front(); el != nil; el = el.Next() {
		if f.Matches(el.Value.(*entry).q) {
			n++
		}
	}
	if f.Ended {
		m.eachRetained(f, func(*entry) { n++ })
	}
	return n, nil
}

// List returns the pending questions that match f, oldest first, never nil,
// then with f.Ended the retained ended ones in ending order. Without f.Ended
// it walks only pending questions, so it costs O(pending).
func (m *Store) List(ctx context.Context, f Filter) ([]*Question, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("list questions: %w", ErrClosed)
	}
	if f.SessionID != "" {
		return m.listSession(f), nil
	}
	var found []Question
	if f == (Filter{}) {
		found = make([]Question, 0, m.pending.Len())
	}
	for el := m.pending.Front(); el != nil; el = el.Next() {
		// Only pending entries are indexed, and their records never change.
		if e := el.Value.(*entry); f.Matches(e.q) {
			found = append(found, *e.q)
		}
	}
	// One allocation for all the copies instead of one per question.
	list := make([]*Question, len(found))
	for i := range found {
		list[i] = &found[i]
	}
	if f.Ended {
		m.eachRetained(f, func(e *entry) {
			e.mu.Lock()
			list = append(list, e.snapshot())
			e.mu.Unlock()
		})
	}
	return list, nil
}

// PendingVersion changes whenever a question joins or leaves the pending
// list. Read before two calls of List (without Filter.Ended), the same
// version means the same pending questions: a caller may keep what it made
// of the first answer instead of asking again.
func (m *Store) PendingVersion() uint64 { return m.pendingVersion.Load() }

// eachRetained calls fn, in ending order, for each ended question that
// matches f and whose result is still retained (not expired, not evicted).
// Callers hold mu (read or write).
func (m *Store) eachRetained(f Filter, fn func(*entry)) {
	now := time.Now()
	for el := m.ended.all.Front(); el != nil; el = el.Next() {
		if e := el.Value.(*entry); !e.expired(now) && f.Matches(e.q) {
			fn(e)
		}
	}
}

// pendingEntriesLocked lists the pending entries, oldest first. Callers
// hold m.mu (read or write).
func (m *Store) pendingEntriesLocked() []*entry {
	entries := make([]*entry, 0, m.pending.Len())
	for el := m.pending.Front(); el != nil; el = el.Next() {
		entries = append(entries, el.Value.(*entry))
	}
	return entries
}

// stopTimers stops the timers of entries (deadlines, retries of their
// commits).
func stopTimers(entries []*entry) {
	for _, e := range entries {
		e.mu.Lock()
		if e.timer != nil {
			e.timer.Stop()
		}
		e.mu.Unlock()
	}
}

// lockOpen takes m.mu, unless the store is closed: then it returns false
// with m.mu released, and the caller returns ErrClosed.
func (m *Store) lockOpen() bool {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return false
	}
	return true
}

// rlockOpen is lockOpen taking m.mu for reading.
func (m *Store) rlockOpen() bool {
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return false
	}
	return true
}

// Close stops timers and background work without ending any question;
// later calls return ErrClosed, and so do Waits blocked when it runs. Journal
// commits already under way finish first, and what they committed is applied
// and reported as usual. It returns once those commits, the janitor and any
// deadline callback already running have finished, or with ctx's error if
// ctx ends first. It does not close the journal.
func (m *Store) Close(ctx context.Context) error {
	if !m.lockOpen() {
		return fmt.Errorf("close store: %w", ErrClosed)
	}
	m.closed = true
	m.mu.Unlock()

	finished := make(chan struct{})
	go func() {
		defer close(finished)
		m.commits.Wait()
		close(m.closing)
		<-m.janitorDone

		m.mu.Lock()
		armed := m.pendingEntriesLocked()
		// Records of evicted entries not yet deleted stay in the journal;
		// Open applies the bound again.
		m.entries, m.pending, m.ended, m.evicted, m.keys = nil, nil, newRetainedQueue(), nil, nil
		m.mu.Unlock()
		stopTimers(armed)
		m.timers.Wait()
	}()
	select {
	case <-finished:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close store: %w", ctx.Err())
	}
}

// lookup finds a live entry: pending, or ended and within retention. An
// evicted entry is expired, so it fails here like any other.
func (m *Store) lookup(op, id string) (*entry, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("%s question %q: %w", op, id, ErrClosed)
	}
	e, ok := m.entries[id]
	if !ok || e.expired(time.Now()) {
		return nil, fmt.Errorf("%s question %q: %w", op, id, ErrNotFound)
	}
	return e, nil
}
