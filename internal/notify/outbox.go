package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
)

// record is a delivery as the outbox keeps it, under "<endpoint key>/<event id>".
type record struct {
	Event string          `json:"event"`
	At    time.Time       `json:"at"`
	Body  json.RawMessage `json:"body"`
}

// store writes d to the outbox.
func (e *endpoint) store(ctx context.Context, d *delivery) error {
	value, err := json.Marshal(record{Event: d.event, At: d.at, Body: d.body})
	if err != nil {
		return fmt.Errorf("encoding notification %s: %w", d.id, err)
	}
	return e.n.outbox.Put(ctx, e.recordKey(d), value)
}

// storeQueued writes the notifications of a failing endpoint to the outbox,
// so that they outlive a crash as well as a stop.
func (e *endpoint) storeQueued(ctx context.Context) {
	if e.n.outbox == nil {
		return
	}
	e.mu.Lock()
	var todo []*delivery
	for _, d := range append([]*delivery{e.inflight}, e.queue...) {
		if d != nil && !d.stored {
			d.stored = true // now, so that dropping it meanwhile deletes the record
			todo = append(todo, d)
		}
	}
	e.mu.Unlock()
	ctx = context.WithoutCancel(ctx) // a local write: Close stopping the attempts must not fail it
	for _, d := range todo {
		err := e.store(ctx, d)
		e.mu.Lock()
		if err != nil {
			d.stored = false
		} else {
			d.storedAt = time.Now()
		}
		e.mu.Unlock()
		if err != nil {
			e.log.Warn("could not keep a notification in the outbox", zap.Error(err))
			return
		}
	}
}

// forgetDropped deletes the records of notifications dropped from a full
// queue.
func (e *endpoint) forgetDropped(ctx context.Context) {
	e.mu.Lock()
	keys := e.forget
	e.forget = nil
	e.mu.Unlock()
	for _, key := range keys {
		if err := e.n.outbox.Delete(context.WithoutCancel(ctx), key); err != nil {
			e.log.Warn("could not delete a dropped notification from the outbox", zap.Error(err))
		}
	}
}

// undelivered returns what is in flight and queued; call it once the worker
// has stopped.
func (e *endpoint) undelivered() []*delivery {
	e.mu.Lock()
	defer e.mu.Unlock()
	left := slices.Clone(e.queue)
	if e.inflight != nil {
		left = append([]*delivery{e.inflight}, left...)
	}
	return left
}

// restore queues what the outbox kept for the configured endpoints (what
// nobody holds, for a Claimer) and deletes the rest (see adopt).
func (n *Notifier) restore(ctx context.Context) error {
	if n.outbox == nil {
		return nil
	}
	records, err := n.outbox.Load(ctx)
	if err != nil {
		return fmt.Errorf("loading the notification outbox: %w", err)
	}
	queued, discarded, err := n.adopt(ctx, records)
	if err != nil {
		return err
	}
	if queued > 0 || discarded > 0 {
		n.log.Info("notification outbox restored", zap.Int("queued", queued), zap.Int("discarded", discarded))
	}
	return nil
}

// adopt queues outbox records for the configured endpoints, in order of
// their event ids (oldest first), skipping what an endpoint holds already,
// and deletes the rest: records of endpoints no longer configured, older
// than MaxAge, or beyond a queue's length. It returns how many it queued
// and discarded.
func (n *Notifier) adopt(ctx context.Context, records map[string][]byte) (queued, discarded int, err error) {
	byKey := map[string]*endpoint{}
	for _, e := range n.endpoints {
		byKey[e.key] = e
	}
	kept := map[*endpoint][]*delivery{}
	var stale []string
	for key, value := range records {
		d, e := n.restored(key, value, byKey)
		if d == nil {
			stale = append(stale, key)
			continue
		}
		kept[e] = append(kept[e], d)
	}
	for e, ds := range kept {
		added, dropped := e.adopt(ds)
		queued += added
		stale = append(stale, dropped...)
	}
	for _, key := range stale {
		if err := n.outbox.Delete(ctx, key); err != nil {
			return queued, len(stale), fmt.Errorf("emptying the notification outbox: %w", err)
		}
	}
	return queued, len(stale), nil
}

// adopt queues ds, stored deliveries, but those the endpoint holds
// already, keeping the queue in event order and within its length; it
// returns how many it queued and the outbox keys of those it dropped.
func (e *endpoint) adopt(ds []*delivery) (queued int, dropped []string) {
	e.mu.Lock()
	held := map[string]bool{}
	for _, d := range append([]*delivery{e.inflight}, e.queue...) {
		if d != nil {
			held[d.id] = true
		}
	}
	for _, d := range ds {
		if !held[d.id] {
			held[d.id] = true
			e.queue = append(e.queue, d)
			queued++
		}
	}
	slices.SortStableFunc(e.queue, func(a, b *delivery) int { return cmp.Compare(a.id, b.id) })
	if extra := len(e.queue) - e.n.opts.QueueLength; extra > 0 {
		for i, d := range e.queue[:extra] {
			if d.stored {
				dropped = append(dropped, e.recordKey(d))
			}
			e.queue[i] = nil
		}
		e.queue = e.queue[extra:]
		queued = max(queued-extra, 0)
	}
	e.mu.Unlock()
	if queued > 0 {
		select {
		case e.wake <- struct{}{}:
		default:
		}
	}
	return queued, dropped
}

// restored decodes one outbox record; nil if it is not to be delivered.
func (n *Notifier) restored(key string, value []byte, byKey map[string]*endpoint) (*delivery, *endpoint) {
	endpointKey, id, ok := strings.Cut(key, "/")
	e := byKey[endpointKey]
	var r record
	if !ok || e == nil || json.Unmarshal(value, &r) != nil || time.Since(r.At) >= n.opts.MaxAge {
		return nil, nil
	}
	return &delivery{id: id, event: r.Event, body: r.Body, at: r.At, stored: true, storedAt: time.Now()}, e
}
