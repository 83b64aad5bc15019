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
	// ErrForbidden: another agent set this session's record.
	ErrForbidden = errors.New("session is configured by another agent")
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

// Store is what the HTTP layer needs of a registry; a networked backend can
// implement it as well.
type Store interface {
	// Get returns the session's record, or the default for a session nobody
	// configured (Configured false). It fails only when the store does.
	Get(ctx context.Context, id string) (Session, error)
	// Put creates or replaces a record for agent (the caller); created
	// reports which. It fails with ErrForbidden when another agent set it,
	// and with a *FieldError when the record is invalid or asks through a
	// parent whose capability is None (see Registry.Put).
	Put(ctx context.Context, s Session, agent string) (stored Session, created bool, err error)
	// Delete removes a record so the default applies again, and returns it.
	Delete(ctx context.Context, id, agent string) (Session, error)
}

// Options configure a Registry.
type Options struct {
	// Default is the capability of sessions nobody configured: User or None
	// (a default cannot name a parent). Zero means User.
	Default Capability
	// MaxSessions bounds the records kept; 0 means unlimited.
	MaxSessions int
	// Journal, when set, keeps records across restarts: Open loads it, and
	// every change is committed to it before it takes effect.
	Journal Journal
}

// Registry is the Store kept in memory, optionally backed by a Journal.
// It is safe for concurrent use.
type Registry struct {
	opts Options

	// changing orders Put and Delete, held across the journal write, so the
	// journal and memory agree on the order of changes; mu guards sessions
	// only for the moment of a read or an update, so reads never wait for
	// a disk sync.
	changing sync.Mutex
	mu       sync.RWMutex
	sessions map[string]Session
}

var _ Store = (*Registry)(nil)

// Open returns a Registry holding whatever opts.Journal holds.
func Open(ctx context.Context, opts Options) (*Registry, error) {
	switch opts.Default {
	case "":
		opts.Default = User
	case User, None:
	default:
		return nil, fmt.Errorf("session registry: the default capability must be %q or %q, got %q", User, None, opts.Default)
	}
	r := &Registry{opts: opts, sessions: make(map[string]Session)}
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
		if err := s.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %q is invalid: %w", ErrCorrupt, key, err)
		}
		s.Configured = true
		r.sessions[key] = s
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
	r.mu.RLock()
	s, ok := r.sessions[id]
	r.mu.RUnlock()
	if !ok {
		return Session{ID: id, Capability: r.opts.Default}, nil
	}
	return s, nil
}

// Put implements Store. Changes to one registry are serialised, so the
// journal and memory never disagree about the order of two writes.
//
// A Parent session whose parent may ask nobody (None, configured or by
// default) is refused: its questions would be listed where nobody answers
// them. The parent can still become None later; asking then is refused too
// (the HTTP layer checks the parent at every question).
func (r *Registry) Put(ctx context.Context, s Session, agent string) (Session, bool, error) {
	s.SetBy = agent
	if err := s.Validate(); err != nil {
		return Session{}, false, err
	}
	s.Configured = true
	r.changing.Lock()
	defer r.changing.Unlock()
	r.mu.RLock()
	old, exists := r.sessions[s.ID]
	count := len(r.sessions)
	parent := r.capabilityLocked(s.ParentID)
	r.mu.RUnlock()
	if s.Capability == Parent && parent == None {
		return Session{}, false, ParentOnNone(s.ParentID)
	}
	if exists && !mayChange(old, agent) {
		return Session{}, false, ErrForbidden
	}
	if !exists && r.opts.MaxSessions > 0 && count >= r.opts.MaxSessions {
		return Session{}, false, fmt.Errorf("%w: at most %d", ErrFull, r.opts.MaxSessions)
	}
	s.UpdatedAt = time.Now().UTC().Round(time.Millisecond)
	if r.opts.Journal != nil {
		raw, err := json.Marshal(s)
		if err != nil {
			return Session{}, false, fmt.Errorf("encoding session %q: %w", s.ID, err)
		}
		if err := r.opts.Journal.Put(ctx, s.ID, raw); err != nil {
			return Session{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	r.mu.Lock()
	r.sessions[s.ID] = s
	r.mu.Unlock()
	return s, !exists, nil
}

// capabilityLocked is the capability in force for id; call it with mu held.
func (r *Registry) capabilityLocked(id string) Capability {
	if s, ok := r.sessions[id]; ok {
		return s.Capability
	}
	return r.opts.Default
}

// Delete implements Store.
func (r *Registry) Delete(ctx context.Context, id, agent string) (Session, error) {
	r.changing.Lock()
	defer r.changing.Unlock()
	r.mu.RLock()
	old, exists := r.sessions[id]
	r.mu.RUnlock()
	switch {
	case !exists:
		return Session{}, ErrNotFound
	case !mayChange(old, agent):
		return Session{}, ErrForbidden
	}
	if r.opts.Journal != nil {
		if err := r.opts.Journal.Delete(ctx, id); err != nil {
			return Session{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	r.mu.Lock()
	delete(r.sessions, id)
	r.mu.Unlock()
	return old, nil
}

// mayChange reports whether agent may change or remove s: the agent that
// set it may, and anyone may change a record set while questiond ran without
// agent tokens (no owner), which would otherwise be stuck once tokens are
// configured.
func mayChange(s Session, agent string) bool { return s.SetBy == "" || s.SetBy == agent }

// ParentOnNone is the refusal of a Parent session whose parent may ask
// nobody; every Store gives it in the same words.
func ParentOnNone(parentID string) *FieldError {
	return &FieldError{Field: "parentSessionID", Problem: fmt.Sprintf(
		"parent session %s may not ask questions (its question capability is \"none\"), so neither can a session asking through it; set the parent to \"user\" first, or give this session \"none\"", parentID)}
}
