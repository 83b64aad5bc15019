package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors of a Registry.
var (
	// ErrNotFound: Delete of a session nobody configured.
	ErrNotFound = errors.New("session is not configured")
	// ErrForbidden: the session belongs to another agent (an *OwnedError
	// says which).
	ErrForbidden = errors.New("session belongs to another agent")
	// ErrFull: the registry holds its maximum number of sessions.
	ErrFull = errors.New("too many configured sessions")
	// ErrUnavailable: the journal failed; nothing was changed.
	ErrUnavailable = errors.New("session records are unavailable")
	// ErrCorrupt: Open found a record it cannot read; the journal is left
	// as it is.
	ErrCorrupt = errors.New("session record is corrupt")
)

// Journal keeps records across restarts. *pending.Table implements it.
type Journal interface {
	Load(ctx context.Context) (map[string][]byte, error)
	Put(ctx context.Context, key string, value []byte) error
	Delete(ctx context.Context, key string) error
}

// Records is what the question service and the session routes need of a
// registry; a networked backend can implement it as well.
type Records interface {
	// Get returns the session's record, or the default for a session nobody
	// configured (Configured false). It fails only when the store does.
	Get(ctx context.Context, id string) (Session, error)
	// Put creates or replaces a record for agent (the caller, or
	// Operator); created reports which. It fails with an *OwnedError when
	// the session or its parent is another agent's (see PlanPut), with a
	// *FieldError when the record is invalid or asks through a parent whose
	// capability is None, and with ErrFull or ErrAgentFull beyond the
	// limits.
	Put(ctx context.Context, s Session, agent string) (stored Session, created bool, err error)
	// Delete removes a record so the default applies again, and returns it.
	Delete(ctx context.Context, id, agent string) (Session, error)
	// Claim makes session id agent's as a question is asked in it, durably
	// before the question is stored, and returns the session as Get does.
	// It fails with an *OwnedError when the session is another agent's
	// (see PlanClaim).
	Claim(ctx context.Context, id, agent string) (Session, error)
}

// Options configure a Registry.
type Options struct {
	// Default is the capability of sessions nobody configured: User or None
	// (a default cannot name a parent). Zero means DefaultCapability.
	Default Capability
	// MaxSessions bounds the records kept; 0 means unlimited.
	MaxSessions int
	// MaxSessionsPerAgent bounds the records one agent keeps; 0 means
	// unlimited. Claims made by asking count against neither bound.
	MaxSessionsPerAgent int
	// ClaimHold is how long a session nobody configured stays the agent's
	// that last asked in it (or named it as a parent): the longest a
	// question asked now can be held, its timeout and its retention. 0
	// means for ever.
	ClaimHold time.Duration
	// Journal, when set, keeps records across restarts: Open loads it, and
	// every change is committed to it before it takes effect.
	Journal Journal
}

// Registry is the Store kept in memory, optionally backed by a Journal.
// It is safe for concurrent use.
type Registry struct {
	opts Options

	// changing orders Put, Delete, the writes of Claim and the sweeps of
	// lapsed claims, held across the journal write, so the journal and
	// memory agree on the order of changes; mu guards sessions and the
	// counts only for the moment of a read or an update (taken after
	// changing, never before), so reads never wait for a disk sync.
	changing sync.Mutex
	mu       sync.RWMutex
	sessions map[string]Session // as stored: claims have no capability
	counted  int                // records that count against MaxSessions
	perAgent map[string]int     // of those, each owner's
	swept    time.Time          // when lapsed claims were last removed (under changing)
}

var _ Records = (*Registry)(nil)

// Open returns a Registry holding whatever opts.Journal holds.
func Open(ctx context.Context, opts Options) (*Registry, error) {
	switch opts.Default {
	case "":
		opts.Default = DefaultCapability
	case User, None:
	default:
		return nil, fmt.Errorf("session registry: the default capability must be %q or %q, got %q", User, None, opts.Default)
	}
	r := &Registry{opts: opts, sessions: make(map[string]Session), perAgent: make(map[string]int)}
	if opts.Journal == nil {
		return r, nil
	}
	records, err := opts.Journal.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading session records: %w", err)
	}
	for key, raw := range records {
		var s Session
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("%w: %q does not decode: %w", ErrCorrupt, key, err)
		}
		if s.ID != key {
			return nil, fmt.Errorf("%w: %q holds session %q", ErrCorrupt, key, s.ID)
		}
		if s.Capability == User {
			// Earlier versions kept a parent named by a user session; it
			// never did anything, and Validate now refuses it.
			s.ParentID = ""
		}
		if err := s.validStored(); err != nil {
			return nil, fmt.Errorf("%w: %q is invalid: %w", ErrCorrupt, key, err)
		}
		r.setLocked(s)
	}
	if err := r.sweep(ctx, time.Now()); err != nil {
		return nil, err
	}
	return r, nil
}

// Default returns the capability of sessions nobody configured.
func (r *Registry) Default() Capability { return r.opts.Default }

// Get implements Store.
func (r *Registry) Get(ctx context.Context, id string) (Session, error) {
	if err := ctx.Err(); err != nil {
		return Session{}, err
	}
	s, ok := r.lookup(id, time.Now())
	if !ok {
		return Session{ID: id, Capability: r.opts.Default}, nil
	}
	return s.view(r.opts.Default), nil
}

// lookup is the live record of id (see Live).
func (r *Registry) lookup(id string, now time.Time) (Session, bool) {
	r.mu.RLock()
	s, ok := r.sessions[id]
	r.mu.RUnlock()
	return Live(s, ok, now, r.opts.ClaimHold)
}

// Put implements Store. Changes to one registry are serialised, so the
// journal and memory never disagree about the order of two writes, and the
// ownership rules (PlanPut) see the records as they are when written.
//
// A Parent session whose parent may ask nobody (None, configured or by
// default) is refused: its questions would be listed where nobody answers
// them. The parent can still become None later; asking then is refused too
// (the HTTP layer checks the parent at every question).
func (r *Registry) Put(ctx context.Context, s Session, agent string) (Session, bool, error) {
	if err := s.Validate(); err != nil {
		return Session{}, false, err
	}
	r.changing.Lock()
	defer r.changing.Unlock()
	now := time.Now()
	if err := r.sweep(ctx, now); err != nil {
		return Session{}, false, err
	}
	old, exists := r.lookup(s.ID, now)
	parent, parentExists := r.lookup(s.ParentID, now)
	r.mu.RLock()
	total, mine := r.counted, r.perAgent[agent]
	r.mu.RUnlock()
	c, err := PlanPut(s, agent, old, exists, parent, parentExists, r.opts.Default, now)
	if err != nil {
		return Session{}, false, err
	}
	if err := CheckRoom(c, agent, total, mine, r.opts); err != nil {
		return Session{}, false, err
	}
	if c.ParentClaim != nil {
		if err := r.write(ctx, *c.ParentClaim); err != nil {
			return Session{}, false, err
		}
	}
	if err := r.write(ctx, c.Record); err != nil {
		return Session{}, false, err
	}
	return c.Record.view(r.opts.Default), c.Created, nil
}

// Claim implements Store.
func (r *Registry) Claim(ctx context.Context, id, agent string) (Session, error) {
	if err := ctx.Err(); err != nil {
		return Session{}, err
	}
	hold := r.opts.ClaimHold
	rec, exists := r.lookup(id, time.Now())
	next, write, err := PlanClaim(id, rec, exists, agent, time.Now(), hold)
	if err != nil || !write {
		return next.view(r.opts.Default), err
	}
	r.changing.Lock()
	defer r.changing.Unlock()
	now := time.Now()
	if err := r.sweep(ctx, now); err != nil {
		return Session{}, err
	}
	rec, exists = r.lookup(id, now)
	if next, write, err = PlanClaim(id, rec, exists, agent, now, hold); err != nil {
		return Session{}, err
	}
	if write {
		if err := r.write(ctx, next); err != nil {
			return Session{}, err
		}
	}
	return next.view(r.opts.Default), nil
}

// write commits s to the journal, then to memory. Call it holding
// changing.
func (r *Registry) write(ctx context.Context, s Session) error {
	s.Configured = false // never stored
	if r.opts.Journal != nil {
		raw, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("encoding session %q: %w", s.ID, err)
		}
		if err := r.opts.Journal.Put(ctx, s.ID, raw); err != nil {
			return fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	r.mu.Lock()
	r.setLocked(s)
	r.mu.Unlock()
	return nil
}

// sweepBatch bounds the lapsed claims one sweep removes, so the change
// that runs it waits for a bounded number of journal writes; the next
// change goes on where it stopped.
const sweepBatch = 256

// sweep removes lapsed claims, from the journal first, at most once every
// quarter of ClaimHold (sooner when the last sweep left some). Call it
// holding changing.
func (r *Registry) sweep(ctx context.Context, now time.Time) error {
	hold := r.opts.ClaimHold
	if hold == 0 || now.Sub(r.swept) < hold/4 {
		return nil
	}
	var lapsed []string
	r.mu.RLock()
	for id, s := range r.sessions {
		if s.lapsed(now, hold) {
			if lapsed = append(lapsed, id); len(lapsed) == sweepBatch {
				break
			}
		}
	}
	r.mu.RUnlock()
	for _, id := range lapsed {
		if r.opts.Journal != nil {
			if err := r.opts.Journal.Delete(ctx, id); err != nil {
				return fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
		}
		r.mu.Lock()
		r.forgetLocked(id)
		r.mu.Unlock()
	}
	if len(lapsed) < sweepBatch {
		r.swept = now
	}
	return nil
}

// Len is how many records the registry keeps, claims included.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.sessions)
}

// setLocked stores s in memory and keeps the counts; call it with mu held
// for writing (or before the registry is shared).
func (r *Registry) setLocked(s Session) {
	r.forgetLocked(s.ID)
	r.sessions[s.ID] = s
	if s.counted() {
		r.counted++
		r.perAgent[s.SetBy]++
	}
}

// forgetLocked removes id from memory and the counts; call it with mu held
// for writing.
func (r *Registry) forgetLocked(id string) {
	old, ok := r.sessions[id]
	if !ok {
		return
	}
	delete(r.sessions, id)
	if old.counted() {
		r.counted--
		if r.perAgent[old.SetBy]--; r.perAgent[old.SetBy] == 0 {
			delete(r.perAgent, old.SetBy)
		}
	}
}

// Delete implements Store. A session its owner asked in stays its owner's:
// its configuration goes, a claim stays.
func (r *Registry) Delete(ctx context.Context, id, agent string) (Session, error) {
	r.changing.Lock()
	defer r.changing.Unlock()
	now := time.Now()
	old, exists := r.lookup(id, now)
	keep, err := PlanDelete(id, old, exists, agent, now)
	if err != nil {
		return Session{}, err
	}
	if keep != nil {
		if err := r.write(ctx, *keep); err != nil {
			return Session{}, err
		}
		return old.view(r.opts.Default), nil
	}
	if r.opts.Journal != nil {
		if err := r.opts.Journal.Delete(ctx, id); err != nil {
			return Session{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	r.mu.Lock()
	r.forgetLocked(id)
	r.mu.Unlock()
	return old.view(r.opts.Default), nil
}

// ParentOnNone is the refusal of a Parent session whose parent may ask
// nobody; every Store gives it in the same words.
func ParentOnNone(parentID string) *FieldError {
	return &FieldError{Field: "parentSessionID", Problem: fmt.Sprintf(
		"parent session %s may not ask questions (its question capability is \"none\"), so neither can a session asking through it; set the parent to \"user\" first, or give this session \"none\"", parentID)}
}
