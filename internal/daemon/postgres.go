package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
)

// postgres is a replica's share of a PostgreSQL database: the pool, and
// the tailer that applies the other replicas' changes to the local store.
//
// Each replica keeps a pending.Store as its mirror of the shared
// questions: futures stay channels and deadlines timers, as on one
// machine. Every creation and ending is committed to the database first
// (pgstore.Journal), where a conditional write lets exactly one replica's
// ending win; the tailer then brings it to every other replica's mirror
// (pending.Store.Observe), which wakes its waiting agents. Each replica's
// event streams publish every change, its own included, when its tailer
// reaches it (httpapi.Events.Observed), so all of them carry the same
// events in the log's order; webhooks go from the replica that made the
// change, at once. A replica that stops leaves its questions pending for
// the others.
type postgres struct {
	db     *pgstore.DB
	mirror *pgstore.Mirror // d.store, following the other replicas
}

// openPostgres connects to cfg.DatabaseURL and migrates its schema.
func (d *Daemon) openPostgres(ctx context.Context, cfg Config) error {
	opts := cfg.Postgres
	opts.Logger = d.log
	// The API's limits on pending questions hold for the whole cluster:
	// the database enforces them too, against creations on other replicas.
	opts.MaxPending, opts.MaxPendingPerAgent = cfg.API.Limits.MaxPending, cfg.API.Limits.MaxPendingPerAgent
	// So do the byte budgets (see pgstore.Options).
	opts.MaxBytes, opts.MaxBytesPerAgent = cfg.Store.MaxBytes, cfg.Store.MaxBytesPerAgent
	opts.KeyRetention = max(cfg.Store.KeyRetention, cfg.Store.Retention)
	db, err := waitForPostgres(ctx, d.log, func() (*pgstore.DB, error) {
		return pgstore.Open(ctx, cfg.DatabaseURL, opts)
	})
	if err != nil {
		return fmt.Errorf("opening the PostgreSQL database: %w", err)
	}
	d.pg = &postgres{db: db}
	d.durable = true
	// Said here, before the store restores what the database holds.
	d.log.Info("question store opened: PostgreSQL, shared with every replica on the database")
	return nil
}

// openReplica restores the questions from the database and starts
// following the other replicas' changes from what it restored.
func (d *Daemon) openReplica(ctx context.Context, opts pending.Options, events *httpapi.Events) error {
	journal := d.pg.db.Questions()
	// Every replica's streams publish the log's changes in its order, this
	// replica's own too (events.Observed); the store reports none of them.
	events.FromLog()
	opts.Journal = journal
	if d.metrics != nil {
		opts.Journal = d.metrics.Journal(journal)
	}
	store, err := pending.Open(ctx, opts)
	if err != nil {
		return fmt.Errorf("restoring questions from PostgreSQL: %w", err)
	}
	d.store = store
	d.pg.mirror = d.pg.db.Follow(store, journal, pgstore.TailOptions{Announce: events.Observed})
	return nil
}

// announceOwn waits until the tail has announced every change this
// replica made (timeouts included), so streams closing next carry them.
// A tail that cannot get there in time is logged; the shutdown goes on.
func (d *Daemon) announceOwn(ctx context.Context) {
	if d.pg == nil || d.pg.mirror == nil {
		return
	}
	if err := d.pg.mirror.AwaitOwnChanges(ctx); err != nil {
		d.log.Warn("shutting down before this replica's last changes were announced on its streams", zap.Error(err))
	}
}

// stopFollowing stops applying other replicas' changes; idempotent.
func (d *Daemon) stopFollowing() {
	if d.pg != nil && d.pg.mirror != nil {
		d.pg.mirror.Stop()
	}
}

// closePostgres closes the pool, after the store.
func (d *Daemon) closePostgres() {
	if d.pg != nil {
		d.stopFollowing()
		d.pg.db.Close()
	}
}

// Waiting for a database that does not answer yet: the first retry comes
// after startWaitFirst, each later one after twice as long, at most
// startWaitMost; a reminder is logged every startWaitReminder.
const (
	startWaitFirst    = 250 * time.Millisecond
	startWaitMost     = 5 * time.Second
	startWaitReminder = time.Minute
)

// waitForPostgres opens the database with open, waiting while it cannot be
// reached or is starting up (pgstore.NotYetReachable) until ctx ends (a
// signal): replicas and their database start together (docker compose, a
// rollout), and a replica that gave up at once would need its orchestrator
// to try again, later. A database that answers with a refusal (a wrong
// password, no such database, a newer schema) is an error at once. Logged
// once at the start of the wait, once a minute while it lasts, and once
// when it is over.
func waitForPostgres(ctx context.Context, log *zap.Logger, open func() (*pgstore.DB, error)) (*pgstore.DB, error) {
	start := time.Now()
	lastSaid := start
	pause := startWaitFirst
	for attempt := 1; ; attempt++ {
		db, err := open()
		switch {
		case err == nil:
			if attempt > 1 {
				log.Info("PostgreSQL answers; going on", zap.Duration("waited", time.Since(start).Round(time.Millisecond)), zap.Int("attempts", attempt))
			}
			return db, nil
		case !pgstore.NotYetReachable(err) || ctx.Err() != nil:
			return nil, err
		case attempt == 1:
			log.Warn("PostgreSQL does not answer yet; waiting for it (SIGTERM stops)", zap.Error(err))
		case time.Since(lastSaid) >= startWaitReminder:
			lastSaid = time.Now()
			log.Warn("still waiting for PostgreSQL", zap.Duration("waited", time.Since(start).Round(time.Second)), zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped while waiting for PostgreSQL (%w): %w", context.Cause(ctx), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, startWaitMost)
	}
}
