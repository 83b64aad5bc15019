package notify

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Claimer is an Outbox that the notifiers of several replicas share (the
// PostgreSQL one is): each record is held by one notifier at a time under
// a lease, so that a webhook gets each notification from one replica at a
// time. Put holds the record for this notifier; Load claims, as Claim
// does, only what nobody holds.
//
// A notifier with a Claimer renews its leases and claims every third of a
// lease, queueing what it claims as it queues what it loads at its start:
// so the notifications of a replica that died are delivered by another
// within about a lease. Close releases its leases once it has written
// what it did not deliver, for the others' next claim.
type Claimer interface {
	Outbox
	// Lease is how long a record stays held without a renewal.
	Lease() time.Duration
	// Renew extends the lease of every record this notifier holds.
	Renew(ctx context.Context) error
	// Claim takes over the records nobody holds, or whose lease ran out,
	// and returns them, keyed by their key.
	Claim(ctx context.Context) (map[string][]byte, error)
	// Release gives up every record this notifier holds.
	Release(ctx context.Context) error
}

// startSweeping starts renewing and claiming, if the outbox is a Claimer
// and there is a webhook to deliver to.
func (n *Notifier) startSweeping(ctx context.Context) {
	if n.claimer == nil || len(n.endpoints) == 0 {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	n.cancelSweeps = cancel
	n.sweeper.Go(func() { n.sweep(ctx) })
}

// sweep renews and claims every third of a lease until ctx ends. A failure
// is logged once, and again only after a success.
func (n *Notifier) sweep(ctx context.Context) {
	ticker := time.NewTicker(max(n.claimer.Lease()/3, time.Millisecond))
	defer ticker.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		err := n.sweepOnce(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			n.log.Warn("could not renew or claim notifications in the shared outbox; retrying (logged again only once it recovers)", zap.Error(err))
		case err == nil && failing:
			n.log.Info("shared notification outbox reachable again")
		}
		failing = err != nil
	}
}

// sweepOnce renews this notifier's leases, then claims and queues what
// other replicas left.
func (n *Notifier) sweepOnce(ctx context.Context) error {
	renewErr := n.claimer.Renew(ctx)
	records, err := n.claimer.Claim(ctx)
	if err != nil {
		return errors.Join(renewErr, err)
	}
	queued, discarded, err := n.adopt(ctx, records)
	if queued > 0 || discarded > 0 {
		n.log.Info("notifications taken over from the shared outbox", zap.Int("queued", queued), zap.Int("discarded", discarded))
	}
	return errors.Join(renewErr, err)
}

// stopSweeps stops renewing and claiming, and waits for a sweep under way.
func (n *Notifier) stopSweeps() {
	if n.cancelSweeps != nil {
		n.cancelSweeps()
		n.sweeper.Wait()
	}
}

// release gives up every lease, once the sweeps have stopped and what was
// not delivered is written.
func (n *Notifier) release(ctx context.Context) error {
	if n.claimer == nil {
		return nil
	}
	if err := n.claimer.Release(ctx); err != nil {
		return fmt.Errorf("releasing undelivered notifications to the other replicas: %w", err)
	}
	return nil
}
