package pending_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/questiond/questiond/internal/pending"
)

// BenchmarkCreateSettle and BenchmarkCreateSettleBolt run one question's
// round trip (create, then reply) from parallel goroutines: on the memory
// store, and on a durable store committing to a Bolt file with real fsync.
func BenchmarkCreateSettle(b *testing.B) {
	benchCreateSettle(b, newStore(b, pending.Options{}))
}

func BenchmarkCreateSettleBolt(b *testing.B) {
	journal := openBolt(b, "", pending.BoltOptions{})
	benchCreateSettle(b, openStore(b, journal, pending.Options{}))
}

func benchCreateSettle(b *testing.B, m *pending.Store) {
	ctx := context.Background()
	o := replied("Red")
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := "que_" + strconv.FormatInt(next.Add(1), 10)
			if err := m.Create(ctx, ask(id)); err != nil {
				b.Error(err)
				return
			}
			if _, err := m.Settle(ctx, id, o); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkList10k lists a store holding 10 000 pending and 10 000 ended
// questions: everything, and one directory holding 1% of them.
func BenchmarkList10k(b *testing.B) {
	ctx := context.Background()
	m := newStore(b, pending.Options{})
	for i := range 10_000 {
		dir := fmt.Sprintf("/d%d", i%100)
		mustCreate(b, m, ask(fmt.Sprintf("que_%d", i), func(q *pending.Question) { q.Directory = dir }))
		ended := fmt.Sprintf("que_ended_%d", i)
		mustCreate(b, m, ask(ended))
		if _, err := m.Settle(ctx, ended, cancelled(pending.EndRejected)); err != nil {
			b.Fatal(err)
		}
	}
	for name, tt := range map[string]struct {
		filter pending.Filter
		want   int
	}{
		"all":       {pending.Filter{}, 10_000},
		"directory": {pending.Filter{Directory: "/d7"}, 100},
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				list, err := m.List(ctx, tt.filter)
				if err != nil || len(list) != tt.want {
					b.Fatalf("list = %d questions, %v; want %d", len(list), err, tt.want)
				}
			}
		})
	}
}
