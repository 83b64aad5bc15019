package pgstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/questiond/questiond/internal/defaults"
)

// DefaultOutboxLease is how long a replica holds the undelivered
// notifications it wrote or claimed without renewing them: a replica that
// dies leaves its notifications to the others for this long at most (plus
// a third of it, their sweeps' interval).
const DefaultOutboxLease = 30 * time.Second

// Outbox keeps webhook notifications not delivered yet (notify.Outbox,
// and notify.Claimer) in the database, shared by the replicas, each record
// held by one replica at a time under a lease on the database's clock.
//
// A replica's Put holds the record; its notifier renews all its leases
// every third of a lease and, as often, claims the records whose lease ran
// out (their replica died, or lost the database) or that nobody holds
// (released by a replica that stopped, or written before leases existed).
// A claim skips the rows another claim has locked, so two replicas never
// claim a record at once. A replica that cannot renew stops sending what
// it stored once its lease may have run out, and drops what its next
// renewal does not return (notify.Claimer). So a webhook gets each
// notification from one replica at a time; it may still get one twice,
// under the same event id: from a replica that delivered it but died (or
// lost the database) before deleting it, or from an attempt under way when
// a lease ran out. Deliveries are at least once, as on one machine.
type Outbox struct {
	s     *DB
	owner string        // this Outbox's replica, random
	lease time.Duration // Options.OutboxLease
}

// Outbox returns the notification outbox of this replica: records it
// writes are held by it. Each call returns a replica of its own.
func (s *DB) Outbox() *Outbox {
	lease := s.opts.OutboxLease
	defaults.Fill(&lease, DefaultOutboxLease)
	return &Outbox{s: s, owner: "replica-" + rand.Text(), lease: lease}
}

// Lease is how long a record stays held without a renewal.
func (o *Outbox) Lease() time.Duration { return o.lease }

// leaseMicros is the lease as the queries take it.
func (o *Outbox) leaseMicros() int64 { return o.lease.Microseconds() }

// Load claims the records nobody holds, or whose lease ran out, and
// returns them, keyed by their key: at a start, what stopped or dead
// replicas left, and nothing live replicas hold.
func (o *Outbox) Load(ctx context.Context) (map[string][]byte, error) { return o.Claim(ctx) }

// claimBatch bounds the records one statement claims, so that replicas
// sweeping a large backlog at once share it, each lock held briefly.
const claimBatch = 100

// Claim takes over the records nobody holds, or whose lease ran out, and
// returns them, keyed by their key.
func (o *Outbox) Claim(ctx context.Context) (map[string][]byte, error) {
	records := make(map[string][]byte)
	for {
		n, err := o.claimBatch(ctx, records)
		if err != nil {
			return nil, unavailable("claim notifications from the outbox", err)
		}
		if n < claimBatch {
			return records, nil
		}
	}
}

// claimBatch claims up to claimBatch records into records; it returns how
// many. SKIP LOCKED passes over the rows another claim (or a renewal) is
// updating, and the outer condition checks again the rows it locked.
func (o *Outbox) claimBatch(ctx context.Context, records map[string][]byte) (int, error) {
	rows, err := o.s.pool.Query(ctx, `
UPDATE notify_outbox SET owner = $1, lease_until = now() + $2 * interval '1 microsecond'
WHERE key IN (SELECT key FROM notify_outbox WHERE lease_until < now() LIMIT $3 FOR UPDATE SKIP LOCKED)
	AND lease_until < now()
RETURNING key, value`, o.owner, o.leaseMicros(), claimBatch)
	if err != nil {
		return 0, err
	}
	var key string
	var value []byte
	n := 0
	_, err = pgx.ForEachRow(rows, []any{&key, &value}, func() error {
		records[key] = value
		n++
		return nil
	})
	return n, err
}

// Renew extends the lease of every record this replica holds, and
// returns their keys.
func (o *Outbox) Renew(ctx context.Context) ([]string, error) {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	rows, err := o.s.pool.Query(ctx, "UPDATE notify_outbox SET lease_until = now() + $2 * interval '1 microsecond' WHERE owner = $1 RETURNING key",
		o.owner, o.leaseMicros())
	if err != nil {
		return nil, unavailable("renew the notification outbox's leases", err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, unavailable("renew the notification outbox's leases", err)
	}
	return keys, nil
}

// Release gives up every record this replica holds, so that the other
// replicas' next sweep takes them.
func (o *Outbox) Release(ctx context.Context) error {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	_, err := o.s.pool.Exec(ctx, "UPDATE notify_outbox SET owner = '', lease_until = '-infinity' WHERE owner = $1", o.owner)
	if err != nil {
		return unavailable("release the notification outbox's leases", err)
	}
	return nil
}

// Put creates or replaces the record under key, held by this replica;
// a record another replica holds under a running lease is left to it.
func (o *Outbox) Put(ctx context.Context, key string, value []byte) error {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	_, err := o.s.pool.Exec(ctx, `
INSERT INTO notify_outbox AS o (key, value, owner, lease_until) VALUES ($1, $2, $3, now() + $4 * interval '1 microsecond')
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until
WHERE o.owner = EXCLUDED.owner OR o.lease_until < now()`, key, value, o.owner, o.leaseMicros())
	if err != nil {
		return unavailable(fmt.Sprintf("keep notification %s", key), err)
	}
	return nil
}

// Delete removes the record under key, whichever replica holds it: it
// was delivered, so a replica that took it over after this one's lease
// ran out need not deliver it again from the database (what it queued
// already, it still sends).
func (o *Outbox) Delete(ctx context.Context, key string) error {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	if _, err := o.s.pool.Exec(ctx, "DELETE FROM notify_outbox WHERE key = $1", key); err != nil {
		return unavailable(fmt.Sprintf("forget notification %s", key), err)
	}
	return nil
}
