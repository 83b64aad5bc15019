package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/questiond/questiond/internal/session"
)

// Sessions is the session.Records on the sessions table, shared by every
// replica: each read goes to the database, so a record set through one
// replica applies at once on all. It keeps the rules of session.Registry
// (session.PlanPut, PlanClaim, PlanDelete): a session is its owner's across
// replicas, and MaxSessions and MaxSessionsPerAgent bound the records.
type Sessions struct {
	s    *DB
	opts session.Options

	sweepMu sync.Mutex
	swept   time.Time // when this replica last removed lapsed claims
}

// Sessions returns the session records; opts.Journal is ignored.
func (s *DB) Sessions(opts session.Options) (*Sessions, error) {
	switch opts.Default {
	case "":
		opts.Default = session.DefaultCapability
	case session.User, session.None:
	default:
		return nil, fmt.Errorf("session records: the default capability must be %q or %q, got %q", session.User, session.None, opts.Default)
	}
	return &Sessions{s: s, opts: opts}, nil
}

// Default returns the capability of sessions nobody configured.
func (r *Sessions) Default() session.Capability { return r.opts.Default }

// Get implements session.Records.
func (r *Sessions) Get(ctx context.Context, id string) (session.Session, error) {
	s, ok, err := r.get(ctx, r.s.pool, id, false)
	if err != nil {
		return session.Session{}, err
	}
	if s, ok = session.Live(s, ok, time.Now(), r.opts.ClaimHold); !ok {
		return session.Session{ID: id, Capability: r.opts.Default}, nil
	}
	return session.View(s, r.opts.Default), nil
}

// Put implements session.Records. Writers of records take turns (session
// records change rarely, and a session is claimed once), so the ownership
// rules and the bounds hold across replicas.
func (r *Sessions) Put(ctx context.Context, s session.Session, agent string) (session.Session, bool, error) {
	if err := s.Validate(); err != nil {
		return session.Session{}, false, err
	}
	var c session.Change
	err := r.writing(ctx, func(tx pgx.Tx, now time.Time) error {
		old, exists, err := r.live(ctx, tx, s.ID, now)
		if err != nil {
			return err
		}
		var parent session.Session
		var parentExists bool
		if s.Capability == session.Parent {
			if parent, parentExists, err = r.live(ctx, tx, s.ParentID, now); err != nil {
				return err
			}
		}
		if c, err = session.PlanPut(s, agent, old, exists, parent, parentExists, r.opts.Default, now); err != nil {
			return err
		}
		if c.Adds > 0 && (r.opts.MaxSessions > 0 || r.opts.MaxSessionsPerAgent > 0) {
			var total, mine int
			if err := tx.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE record->>'setBy' = $1) FROM sessions WHERE `+countedRecord, agent).Scan(&total, &mine); err != nil {
				return err
			}
			if err := session.CheckRoom(c, agent, total, mine, r.opts); err != nil {
				return err
			}
		}
		if c.ParentClaim != nil {
			if err := upsert(ctx, tx, *c.ParentClaim); err != nil {
				return err
			}
		}
		return upsert(ctx, tx, c.Record)
	})
	if err != nil {
		return session.Session{}, false, sessionError("store session "+s.ID, err)
	}
	return session.View(c.Record, r.opts.Default), c.Created, nil
}

// countedRecord is session.Counted in SQL: every record but the claims
// questions made.
const countedRecord = `NOT (coalesce(record->>'questionCapability', '') = '' AND coalesce(record->>'used', 'false') = 'true')`

// Claim implements session.Records: a read when the session is already the
// agent's, else a write that takes its turn with Put's.
func (r *Sessions) Claim(ctx context.Context, id, agent string) (session.Session, error) {
	rec, exists, err := r.get(ctx, r.s.pool, id, false)
	if err != nil {
		return session.Session{}, err
	}
	hold := r.opts.ClaimHold
	rec, exists = session.Live(rec, exists, time.Now(), hold)
	next, write, err := session.PlanClaim(id, rec, exists, agent, time.Now(), hold)
	if err != nil || !write {
		return session.View(next, r.opts.Default), err
	}
	err = r.writing(ctx, func(tx pgx.Tx, now time.Time) error {
		rec, exists, err := r.live(ctx, tx, id, now)
		if err != nil {
			return err
		}
		if next, write, err = session.PlanClaim(id, rec, exists, agent, now, hold); err != nil || !write {
			return err
		}
		return upsert(ctx, tx, next)
	})
	if err != nil {
		return session.Session{}, sessionError("claim session "+id, err)
	}
	return session.View(next, r.opts.Default), nil
}

// Delete implements session.Records.
func (r *Sessions) Delete(ctx context.Context, id, agent string) (session.Session, error) {
	var old session.Session
	err := r.writing(ctx, func(tx pgx.Tx, now time.Time) error {
		var exists bool
		var err error
		if old, exists, err = r.live(ctx, tx, id, now); err != nil {
			return err
		}
		keep, err := session.PlanDelete(id, old, exists, agent, now)
		switch {
		case err != nil:
			return err
		case keep != nil:
			return upsert(ctx, tx, *keep)
		}
		_, err = tx.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id)
		return err
	})
	if err != nil {
		return session.Session{}, sessionError("delete session "+id, err)
	}
	return session.View(old, r.opts.Default), nil
}

// writing runs change in a transaction that holds the writers' lock on the
// sessions table (not the readers'): a row lock cannot hold a record that
// does not exist yet, so two replicas creating or claiming one (or taking
// the last place under a bound) would both succeed. Once every quarter of
// ClaimHold it first removes the claims that lapsed.
func (r *Sessions) writing(ctx context.Context, change func(tx pgx.Tx, now time.Time) error) error {
	now := time.Now()
	r.sweepMu.Lock()
	sweep := r.opts.ClaimHold > 0 && now.Sub(r.swept) >= r.opts.ClaimHold/4
	r.sweepMu.Unlock()
	err := pgx.BeginFunc(ctx, r.s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "LOCK TABLE sessions IN SHARE ROW EXCLUSIVE MODE"); err != nil {
			return err
		}
		if sweep {
			// session.Live's rule in SQL; updatedAt is written as RFC 3339.
			if _, err := tx.Exec(ctx, `DELETE FROM sessions WHERE coalesce(record->>'questionCapability', '') = ''
AND (record->>'updatedAt')::timestamptz < $1`, now.Add(-(r.opts.ClaimHold + r.opts.ClaimHold/4))); err != nil {
				return err
			}
		}
		return change(tx, now)
	})
	if err == nil && sweep {
		r.sweepMu.Lock()
		r.swept = now
		r.sweepMu.Unlock()
	}
	return err
}

// live reads id's record for a change (locked) as the rules see it (see
// session.Live).
func (r *Sessions) live(ctx context.Context, tx pgx.Tx, id string, now time.Time) (session.Session, bool, error) {
	s, ok, err := r.get(ctx, tx, id, true)
	if err != nil {
		return session.Session{}, false, err
	}
	s, ok = session.Live(s, ok, now, r.opts.ClaimHold)
	return s, ok, nil
}

// upsert writes one record.
func upsert(ctx context.Context, tx pgx.Tx, s session.Session) error {
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encoding session %q: %w", s.ID, err)
	}
	_, err = tx.Exec(ctx, "INSERT INTO sessions (id, record) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record", s.ID, string(raw))
	return err
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
	return s, true, nil
}

func sessionError(op string, err error) error {
	var field *session.FieldError
	for _, sentinel := range []error{session.ErrForbidden, session.ErrFull, session.ErrAgentFull, session.ErrNotFound, session.ErrCorrupt, session.ErrUnavailable} {
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
