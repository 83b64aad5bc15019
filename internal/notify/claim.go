package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
//
// A replica that cannot renew (cut off from the database, not dead) stops
// sending what it stored once its leases may have run out, and drops what
// its next renewal does not return: another replica has it. So a webhook
// gets a notification twice only from an attempt already under way when
// the lease ran out, or from a replica that delivered it and died before
// deleting it.
type Claimer interface {
	Outbox
	// Lease is how long a record stays held without a renewal.
	Lease() time.Duration
	// Renew extends the lease of every record this notifier holds, and
	// returns their keys: a record it stored that is not among them is
	// another replica's now (its lease ran out meanwhile), or gone.
	Renew(ctx context.Context) ([]string, error)
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
	began := time.Now()
	held, renewErr := n.claimer.Renew(ctx)
	if renewErr == nil {
		n.renewed(began, held)
	}
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

// leaseState is what a notifier with a Claimer knows of its leases.
type leaseState struct {
	mu sync.Mutex
	// until is when the leases of what it stored may run out: a lease
	// after the start of its last renewal that succeeded, less a third for
	// an attempt under way and the clocks' drift.
	until time.Time
	// renew is closed and replaced at each renewal that succeeds, to wake
	// the workers waiting for one.
	renew chan struct{}
}

func (n *Notifier) initLeases() {
	n.leases.renew = make(chan struct{})
	n.leases.until = time.Now().Add(n.leaseMargin())
}

// leaseMargin is the part of a lease a notifier counts on: a renewal every
// third of it keeps it held, and a third is left for an attempt under way.
func (n *Notifier) leaseMargin() time.Duration { return n.claimer.Lease() * 2 / 3 }

// renewed records a renewal that began at began and returned held, and
// drops the stored deliveries, stored before it began, that it did not
// return: another replica has them.
func (n *Notifier) renewed(began time.Time, held []string) {
	keys := make(map[string]bool, len(held))
	for _, k := range held {
		keys[k] = true
	}
	for _, e := range n.endpoints {
		if lost := e.dropUnheld(began, keys); lost > 0 {
			e.log.Info("notifications taken over by another replica while this one could not renew its leases; left to it", zap.Int("notifications", lost))
		}
	}
	n.leases.mu.Lock()
	n.leases.until = began.Add(n.leaseMargin())
	close(n.leases.renew)
	n.leases.renew = make(chan struct{})
	n.leases.mu.Unlock()
}

// mayDeliver says whether a delivery, stored in the outbox or not, may be
// sent now, and if not, what closes when it may be asked again: a stored
// one only while this notifier's lease on it holds, since a replica that
// cannot renew may have lost it.
func (n *Notifier) mayDeliver(stored bool) (bool, <-chan struct{}) {
	if n.claimer == nil || !stored {
		return true, nil
	}
	n.leases.mu.Lock()
	defer n.leases.mu.Unlock()
	return time.Now().Before(n.leases.until), n.leases.renew
}

// dropUnheld takes out of the queue, and marks lost if in flight, the
// deliveries stored before since that are not among held; it returns how
// many.
func (e *endpoint) dropUnheld(since time.Time, held map[string]bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	unheld := func(d *delivery) bool {
		return d.stored && !d.storedAt.IsZero() && d.storedAt.Before(since) && !held[e.recordKey(d)]
	}
	lost := 0
	if d := e.inflight; d != nil && !d.lost && unheld(d) {
		d.lost = true
		lost++
	}
	kept := e.queue[:0]
	for _, d := range e.queue {
		if unheld(d) {
			lost++
			continue
		}
		kept = append(kept, d)
	}
	clear(e.queue[len(kept):])
	e.queue = kept
	return lost
}
