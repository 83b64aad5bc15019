package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/questiond/questiond/internal/session"
)

// Sessions is the session.Store on the sessions table, shared by every
// replica: each read goes to the database, so a record set through one
// replica applies at once on all. It keeps the rules of session.Registry:
// only the agent that set a record may change it, and MaxSessions bounds
// the records.
type Sessions struct {
	s    *Store
	opts session.Options
}

var _ session.Store = (*Sessions)(nil)

// Sessions returns the session records; opts.Journal is ignored.
func (s *Store) Sessions(opts session.Options) (*Sessions, error) {
	switch opts.Default {
	case "":
		opts.Default = session.User
	case session.User, session.None:
	default:
		return nil, fmt.Errorf("session records: the default capability must be %q or %q, got %q", session.User, session.None, opts.Default)
	}
	return &Sessions{s: s, opts: opts}, nil
}

// Default returns the capability of sessions nobody configured.
func (r *Sessions) Default() session.Capability { return r.opts.Default }

// Get implements session.Store.
func (r *Sessions) Get(ctx context.Context, id string) (session.Session, error) {
	s, ok, err := r.get(ctx, r.s.pool, id, false)
	if err != nil {
		return session.Session{}, err
	}
	if !ok {
		return session.Session{ID: id, Capability: r.opts.Default}, nil
	}
	return s, nil
}

// Put implements session.Store. Writers of records take turns (session
// records change rarely), so the ownership check and the bound hold across
// replicas.
func (r *Sessions) Put(ctx context.Context, s session.Session, agent string) (session.Session, bool, error) {
	s.SetBy = agent
	if err := s.Validate(); err != nil {
		return session.Session{}, false, err
	}
	s.Configured = true
	var created bool
	err := pgx.BeginFunc(ctx, r.s.pool, func(tx pgx.Tx) error {
		// Serialises writers (not readers): a row lock cannot hold a
		// record that does not exist yet, so two replicas creating one
		// (or taking the last place under MaxSessions) would both succeed.
		if _, err := tx.Exec(ctx, "LOCK TABLE sessions IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return err
		}
		if s.Capability == session.Parent {
			// A parent on none is refused as by the single-machine registry;
			// the table lock keeps the parent from changing meanwhile.
			parent, configured, err := r.get(ctx, tx, s.ParentID, false)
			if err != nil {
				return err
			}
			if !configured {
				parent.Capability = r.opts.Default
			}
			if parent.Capability == session.None {
				return session.ParentOnNone(s.ParentID)
			}
		}
		old, exists, err := r.get(ctx, tx, s.ID, true)
		if err != nil {
			return err
		}
		if exists && !mayChange(old, agent) {
			return session.ErrForbidden
		}
		if !exists && r.opts.MaxSessions > 0 {
			var n int
			if err := tx.QueryRow(ctx, "SELECT count(*) FROM sessions").Scan(&n); err != nil {
				return err
			}
			if n >= r.opts.MaxSessions {
				return fmt.Errorf("%w: at most %d", session.ErrFull, r.opts.MaxSessions)
			}
		}
		s.UpdatedAt = time.Now().UTC().Round(time.Millisecond)
		raw, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("encoding session %q: %w", s.ID, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO sessions (id, record) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record", s.ID, string(raw)); err != nil {
			return err
		}
		created = !exists
		return nil
	})
	if err != nil {
		return session.Session{}, false, sessionError("store session "+s.ID, err)
	}
	return s, created, nil
}

// Delete implements session.Store.
func (r *Sessions) Delete(ctx context.Context, id, agent string) (session.Session, error) {
	var old session.Session
	err := pgx.BeginFunc(ctx, r.s.pool, func(tx pgx.Tx) error {
		var exists bool
		var err error
		old, exists, err = r.get(ctx, tx, id, true)
		switch {
		case err != nil:
			return err
		case !exists:
			return session.ErrNotFound
		case !mayChange(old, agent):
			return session.ErrForbidden
		}
		_, err = tx.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id)
		return err
	})
	if err != nil {
		return session.Session{}, sessionError("delete session "+id, err)
	}
	return old, nil
}

func (r *Sessions) get(ctx context.Context, db querier, id string, lock bool) (session.Session, bool, error) {
	query := "SELECT record::text FROM sessions WHERE id = $1"
	if lock {
		query += " FOR UPDATE"
	}
	var raw string
	err := db.QueryRow(ctx, query, id).Scan(&raw)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return session.Session{}, false, nil
	case err != nil:
		return session.Session{}, false, sessionError("read session "+id, err)
	}
	var s session.Session
	if err := json.Unmarshal([]byte(raw), &s); err != nil || s.ID != id {
		return session.Session{}, false, fmt.Errorf("%w: %q does not decode to its own record (%v)", session.ErrCorrupt, id, err)
	}
	s.Configured = true
	return s, true, nil
}

// mayChange is session.Registry's rule: the agent that set a record may
// change it, and anyone may change one set without agent tokens.
func mayChange(s session.Session, agent string) bool { return s.SetBy == "" || s.SetBy == agent }

func sessionError(op string, err error) error {
	var field *session.FieldError
	for _, sentinel := range []error{session.ErrForbidden, session.ErrFull, session.ErrNotFound, session.ErrCorrupt, session.ErrUnavailable} {
		if errors.Is(err, sentinel) {
			return err
		}
	}
	if errors.As(err, &field) {
		return err
	}
	err = unavailable(op, err)
	if errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%w: %w", session.ErrUnavailable, err)
	}
	return err
}
