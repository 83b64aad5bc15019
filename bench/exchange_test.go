package bench

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// TestExchanges walks every exchange the benchmarks use, one step at a
// time, against each server: both must frame events the same way and answer
// the same routes, or the comparison would not be like for like.
func TestExchanges(t *testing.T) {
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			s := srv.start(t, sse.DefaultQueueLength)
			defer s.stop()
			c := newClient(s.url, 4)
			defer c.close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			events, err := c.subscribe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer events.close()

			id, err := c.ask(ctx)
			if err != nil {
				t.Fatal(err)
			}
			frame, err := events.next()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(frame, typeAsked) {
				t.Fatalf("first frame after asking is %s, want question.asked", frame)
			}
			if got, err := askedID(frame); err != nil || got != id {
				t.Fatalf("question.asked names %q (%v), want %q", got, err, id)
			}
			listed, err := c.list(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(listed, []string{id}) {
				t.Fatalf("GET /question lists %v, want [%s]", listed, id)
			}

			if err := c.reply(ctx, id); err != nil {
				t.Fatal(err)
			}
			if err := c.collect(ctx, id); err != nil {
				t.Fatal(err)
			}
			frame, err = events.next()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(frame, []byte(`"type":"question.replied"`)) || !bytes.Contains(frame, []byte(id)) {
				t.Fatalf("frame after the reply is %s, want question.replied for %s", frame, id)
			}
			if listed, err := c.list(ctx); err != nil || len(listed) != 0 {
				t.Fatalf("GET /question after the reply lists %v (%v), want nothing", listed, err)
			}
		})
	}
}
