package pgstore

import (
	"context"
	"fmt"
)

// Outbox keeps webhook notifications not delivered yet (notify.Outbox) in
// the database, shared by the replicas. A replica writes what it could not
// deliver (a failing webhook, a shutdown) and deletes what it delivered;
// every replica that starts reads all of it and delivers it. So nothing is
// lost with a replica, and a notification that another, still running,
// replica keeps retrying may be delivered twice: deliveries are at least
// once, each with its event id to deduplicate by, as on one machine.
type Outbox struct{ s *Store }

// Outbox returns the notification outbox.
func (s *Store) Outbox() *Outbox { return &Outbox{s: s} }

// Load returns every record, keyed by its key.
func (o *Outbox) Load(ctx context.Context) (map[string][]byte, error) {
	rows, err := o.s.pool.Query(ctx, "SELECT key, value FROM notify_outbox")
	if err != nil {
		return nil, unavailable("load the notification outbox", err)
	}
	defer rows.Close()
	records := make(map[string][]byte)
	for rows.Next() {
		var key string
		var value []byte
		if err := rows.Scan(&key, &value); err != nil {
			return nil, unavailable("load the notification outbox", err)
		}
		records[key] = value
	}
	if err := rows.Err(); err != nil {
		return nil, unavailable("load the notification outbox", err)
	}
	return records, nil
}

// Put creates or replaces the record under key.
func (o *Outbox) Put(ctx context.Context, key string, value []byte) error {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	if _, err := o.s.pool.Exec(ctx, "INSERT INTO notify_outbox (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value", key, value); err != nil {
		return unavailable(fmt.Sprintf("keep notification %s", key), err)
	}
	return nil
}

// Delete removes the record under key, if any.
func (o *Outbox) Delete(ctx context.Context, key string) error {
	ctx, cancel := writeContext(ctx)
	defer cancel()
	if _, err := o.s.pool.Exec(ctx, "DELETE FROM notify_outbox WHERE key = $1", key); err != nil {
		return unavailable(fmt.Sprintf("forget notification %s", key), err)
	}
	return nil
}
