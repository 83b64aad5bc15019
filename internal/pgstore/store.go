package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.uber.org/zap"
)

// ErrUnavailable says PostgreSQL could not be reached or failed; nothing
// was changed. The pending and session errors of the same name wrap it too
// where those packages' callers look for them.
var ErrUnavailable error = unavailableError{}

// unavailableError is ErrUnavailable: it names PostgreSQL as the store that
// failed (pending.FailedStore).
type unavailableError struct{}

func (unavailableError) Error() string       { return "PostgreSQL unavailable" }
func (unavailableError) FailedStore() string { return "PostgreSQL" }

// Options configure Open. Zero values mean the defaults.
type Options struct {
	// Logger gets warnings; nil means zap.NewNop().
	Logger *zap.Logger
	// MaxConns bounds the pool; zero means what the URL's pool_max_conns
	// says, else pgxpool's default (the larger of 4 and the number of CPUs)
	// plus one for the connection a Tailer holds. Two more connections,
	// outside this bound, carry the change log's notifications and the
	// position reads of Mirror.CatchUp (see Store).
	MaxConns int32
	// MaxPending and MaxPendingPerAgent bound the pending questions of the
	// whole cluster, and of one agent (owner), in the database itself: a
	// creation beyond them fails with pending.ErrFull. Zero: no bound.
	MaxPending, MaxPendingPerAgent int
	// MaxBytes and MaxBytesPerAgent are the byte budgets over pending and
	// retained questions (pending.Options' of the same names), enforced in
	// the database too, for the whole cluster: a creation beyond one, once
	// its agent's oldest results are forgotten if that makes room, fails
	// with a *pending.BudgetError wrapping pending.ErrFull. Zero or less:
	// pending.DefaultMaxBytes and DefaultMaxBytesPerAgent.
	MaxBytes, MaxBytesPerAgent int64
	// KeyRetention is how long the Idempotency-Key of a result the
	// database forgets to make room is remembered (gone_keys); zero or
	// less: pending.DefaultKeyRetention.
	KeyRetention time.Duration
	// OutboxLease is how long a replica holds its undelivered
	// notifications without renewing them (see Outbox); zero means
	// DefaultOutboxLease.
	OutboxLease time.Duration
}

// DB is one replica's handle on the shared database: a connection pool
// whose schema Open has brought up to date.
//
// Beside it a pool of two connections (ctl) serves the notifier (see
// announce) and Mirror.CatchUp's read of where the log stands. They
// neither write questions nor wait for the disk; in the request pool, where
// every connection is taken by a change waiting for its commit's flush
// under load, they queued behind those changes (40 to 160 ms per
// notification at 512 agents, before a change's own notification went with
// it), and every other replica learnt of each change that much later.
type DB struct {
	pool   *pgxpool.Pool
	ctl    *pgxpool.Pool
	config *pgxpool.Config
	opts   Options
	log    *zap.Logger

	batches batcher // the journals' creations and endings on their way

	changed    chan struct{} // a change committed (or failed): announce it
	stopNotify context.CancelFunc
	notifyDone chan struct{}
}

// Open connects to the database at url (a libpq URL or key=value string),
// creates or migrates its schema (see Migrate), and returns the store. The
// URL is never logged or put in an error: it may hold a password.
func Open(ctx context.Context, url string, opts Options) (*DB, error) {
	config, err := pgxpool.ParseConfig(url)
	if err != nil {
		// pgx's parse errors quote the URL; say only what is wrong.
		return nil, errors.New("the database URL does not parse as a libpq URL or key=value string")
	}
	// pgxpool reads (and drops) pool_max_conns from the URL itself.
	switch set := strings.Contains(url, "pool_max_conns"); {
	case opts.MaxConns > 0:
		config.MaxConns = opts.MaxConns
	case !set:
		config.MaxConns++ // the tailer's, so requests keep the default
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	config.AfterConnect = commitDurably(log.Named("pgstore"))
	pool, err := pgxpool.NewWithConfig(ctx, config)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, redact(err))
	}
	ctlConfig := config.Copy()
	ctlConfig.MaxConns, ctlConfig.MinConns = ctlConns, 0
	ctl, err := pgxpool.NewWithConfig(ctx, ctlConfig)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, redact(err))
	}
	s := &DB{pool: pool, ctl: ctl, config: config, opts: opts, log: log.Named("pgstore"),
		changed: make(chan struct{}, 1), notifyDone: make(chan struct{})}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		ctl.Close()
		return nil, err
	}
	nctx, cancel := context.WithCancel(context.Background())
	s.stopNotify = cancel
	go s.notifyLoop(nctx)
	return s, nil
}

// commitDurably returns the hook that makes each new connection's commits
// wait for the server's disk when synchronous_commit is off for it (in the
// server's configuration, or for questiond's database or role): every
// acknowledgement promises a change that survives a crash of PostgreSQL,
// and the tail's resumption after one relies on it too (see the package
// doc). "local" is that and no more; a setting that already waits (on,
// remote_write, remote_apply, local) is left as it is. Logged once.
func commitDurably(log *zap.Logger) func(context.Context, *pgx.Conn) error {
	var once sync.Once
	return func(ctx context.Context, conn *pgx.Conn) error {
		var setting string
		if err := conn.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&setting); err != nil {
			return err
		}
		if setting != "off" {
			return nil
		}
		if _, err := conn.Exec(ctx, "SET synchronous_commit = local"); err != nil {
			return err
		}
		once.Do(func() {
			log.Warn("synchronous_commit is off for questiond's connections; questiond sets it to local on them, so that what it acknowledges survives a crash of PostgreSQL")
		})
		return nil
	}
}

// Close closes the pool, after the queries under way.
func (s *DB) Close() {
	s.stopNotify()
	<-s.notifyDone
	s.pool.Close()
	s.ctl.Close()
}

// ctlConns is the size of the pool for notifications and position reads.
const ctlConns = 2

// announce asks the notifier for a notification of the change log's
// channel: after a transaction of several changes committed, so that the
// tailers read them, and after a change failed, since its transaction held
// their read back until it ended. (A single change sends its own: see
// DB.applyBatch.)
func (s *DB) announce() {
	select {
	case s.changed <- struct{}{}:
	default: // one is due already; it covers this change too
	}
}

// notifyLoop sends the notifications announce asks for, one at a time, so
// that a burst of changes costs one. NOTIFY is sent in a transaction of
// its own, never in a change's: PostgreSQL serialises the commits of
// notifying transactions under one lock, fsync included. Its commit need
// not reach the disk (a lost notification is made good by the tailers'
// polling), so it does not wait for one.
func (s *DB) notifyLoop(ctx context.Context) {
	defer close(s.notifyDone)
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.changed:
		}
		_, err := s.ctl.Exec(ctx, notifySQL)
		if err != nil && ctx.Err() == nil {
			s.log.Debug("change log notification not sent; the tailers' polling makes up for it", zap.Error(redact(err)))
		}
		// The notifier serves a busy store (see Store.applyBatch):
		// the changes of the next few milliseconds share one notification.
		select {
		case <-ctx.Done():
			return
		case <-time.After(notifyWindow):
		}
	}
}

// notifyWindow is how long the notifier gathers changes after it sent a
// notification.
const notifyWindow = 5 * time.Millisecond

// Pool is the store's connection pool, for tests and tools.
func (s *DB) Pool() *pgxpool.Pool { return s.pool }

// redact keeps what a connection error says without the connection string
// pgconn may include.
func redact(err error) error {
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return fmt.Errorf("connecting to %s: %w", connErr.Config.Host, connErr.Unwrap())
	}
	return err
}

// NotYetReachable reports whether err, from Open, says the server could not
// be reached (refused, timed out, a name that does not resolve yet) or is
// not accepting connections yet (starting up, recovering), which waiting
// may cure; not when the server answered with a refusal (a wrong
// password, a missing database) or the schema is newer.
func NotYetReachable(err error) bool {
	if !errors.Is(err, ErrUnavailable) {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == codeCannotConnectNow || pgErr.Code == codeTooManyConnections
	}
	return true
}

// SQLSTATEs of a server that answers but cannot take a connection yet.
const (
	codeCannotConnectNow   = "57P03" // starting up, shutting down, in recovery
	codeTooManyConnections = "53300"
)

// unavailable wraps a failed database operation.
func unavailable(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && (strings.HasPrefix(pgErr.Code, "28") || pgErr.Code == "3D000") {
		return fmt.Errorf("%s: %w", op, refusedError{redact(err)})
	}
	return fmt.Errorf("%s: %w: %w", op, ErrUnavailable, redact(err))
}

// refusedError is a server that answered but would not let questiond in: a
// wrong password or role (SQLSTATE class 28), a database that does not
// exist (3D000). It is ErrUnavailable to callers (nothing was changed),
// and says what it is.
type refusedError struct{ err error }

func (e refusedError) Error() string        { return "PostgreSQL refused the connection: " + e.err.Error() }
func (e refusedError) Unwrap() error        { return e.err }
func (e refusedError) Is(target error) bool { return target == ErrUnavailable }
func (e refusedError) FailedStore() string  { return "PostgreSQL" }
