package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/questiond/questiond/internal/pending"
)

const (
	opPut    = "put"
	opDelete = "delete"
)

// Journal returns j timed: every Put and Delete is observed in
// questiond_store_commit_seconds, failed ones too (a failure is as slow as it
// was). Ping passes through, so readiness still reaches j.
func (m *Metrics) Journal(j pending.Journal) pending.Journal {
	m.timing.Do(func() { m.reg.MustRegister(m.commitVec) })
	return &timedJournal{Journal: j, put: m.commits[opPut], del: m.commits[opDelete]}
}

type timedJournal struct {
	pending.Journal
	put, del prometheus.Observer
}

func (t *timedJournal) Put(ctx context.Context, qs ...*pending.Question) error {
	start := time.Now()
	err := t.Journal.Put(ctx, qs...)
	t.put.Observe(time.Since(start).Seconds())
	return err
}

func (t *timedJournal) Delete(ctx context.Context, ids ...string) error {
	start := time.Now()
	err := t.Journal.Delete(ctx, ids...)
	t.del.Observe(time.Since(start).Seconds())
	return err
}

// Ping asks j, when it can be asked.
func (t *timedJournal) Ping(ctx context.Context) error {
	if p, ok := t.Journal.(pending.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}
