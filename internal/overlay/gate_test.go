package overlay

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// treeRoots is a server with sessions: child → parent chains, by name.
type treeRoots struct {
	mu     sync.Mutex
	parent map[string]string
	calls  int
}

func (r *treeRoots) Root(ctx context.Context, id string) (string, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if _, ok := r.parent[id]; !ok {
		return "", false, nil
	}
	for r.parent[id] != "" {
		id = r.parent[id]
	}
	return id, true, nil
}

// gateRig is one stream's gate, with what its stream does: frames
// admitted go out, wakes call Due.
type gateRig struct {
	t     *testing.T
	gate  sse.Filter
	wakes chan struct{}
	out   []string // ids (or types) of what went out, in order
}

func newGateRig(t *testing.T) *gateRig {
	roots := &treeRoots{parent: map[string]string{"ses_R": "", "ses_Rc": "ses_R", "ses_Rcc": "ses_Rc", "ses_S": ""}}
	r := &gateRig{t: t, wakes: make(chan struct{}, 100)}
	r.gate = NewGate(roots)(func() { r.wakes <- struct{}{} })
	t.Cleanup(r.gate.Stop)
	return r
}

func gateFrame(typ, session, idKey, id string) []byte {
	return []byte(`data: {"id":"evt_1","type":"` + typ + `","properties":{"sessionID":"` + session + `","` + idKey + `":"` + id + `"}}` + "\n\n")
}

func (r *gateRig) admit(from sse.Source, text []byte) {
	for _, f := range r.gate.Admit(sse.NewFrame(from, "", text)) {
		r.out = append(r.out, describe(f))
	}
}

// asked admits a question.asked; questiond's own (from the broker) in a
// session named ses_inbox are noted as not the server's, as httpapi does.
func (r *gateRig) asked(from sse.Source, session, id string) {
	note := ""
	if from == sse.FromBroker && session == "ses_inbox" {
		note = NotHosted
	}
	for _, f := range r.gate.Admit(sse.NewFrame(from, note, gateFrame("question.asked", session, "id", id))) {
		r.out = append(r.out, describe(f))
	}
}
func (r *gateRig) replied(from sse.Source, session, id string) {
	r.admit(from, gateFrame("question.replied", session, "requestID", id))
}
func (r *gateRig) permission(session, id string) {
	r.admit(sse.FromFeed, gateFrame("permission.asked", session, "id", id))
}
func (r *gateRig) permitted(session, id string) {
	r.admit(sse.FromFeed, gateFrame("permission.replied", session, "requestID", id))
}

// settle lets the gate's goroutines and timers run, then does what the
// stream does on a wake.
func (r *gateRig) settle() {
	synctest.Wait()
	for {
		select {
		case <-r.wakes:
			for _, f := range r.gate.Due() {
				r.out = append(r.out, describe(f))
			}
		default:
			return
		}
	}
}

// sleep lets d go by, the stream answering wakes meanwhile.
func (r *gateRig) sleep(d time.Duration) {
	time.Sleep(d)
	r.settle()
}

func describe(f sse.Frame) string {
	p, _ := Peek(f.Text())
	return strings.TrimPrefix(p.Type, "question.") + ":" + p.ID + p.RequestID
}

func (r *gateRig) expect(want ...string) {
	r.t.Helper()
	if strings.Join(r.out, " ") != strings.Join(want, " ") {
		r.t.Fatalf("out %q, want %q", r.out, want)
	}
}

func TestGateHoldsOursWhileTheServersQuestionOfTheTreeIsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGateRig(t)
		r.asked(sse.FromFeed, "ses_Rcc", "que_1") // a grandchild: tree R
		r.settle()                                // the tree is looked up meanwhile
		r.expect("asked:que_1")
		r.asked(sse.FromBroker, "ses_Rc", "que_2")
		r.settle()
		r.expect("asked:que_1")
		r.replied(sse.FromFeed, "ses_Rcc", "que_1")
		r.expect("asked:que_1", "replied:que_1")
		r.sleep(QuestionSpacing - time.Millisecond)
		r.expect("asked:que_1", "replied:que_1")
		r.sleep(time.Millisecond)
		r.expect("asked:que_1", "replied:que_1", "asked:que_2")
	})
}

func TestGateHoldsTheServersWhileOursIsShownThenOldestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGateRig(t)
		r.asked(sse.FromBroker, "ses_R", "que_2")
		r.settle()
		r.expect("asked:que_2")
		r.asked(sse.FromFeed, "ses_Rc", "que_4")
		r.asked(sse.FromFeed, "ses_Rcc", "que_3")
		r.settle()
		r.expect("asked:que_2")
		r.replied(sse.FromBroker, "ses_R", "que_2")
		r.sleep(QuestionSpacing)
		r.expect("asked:que_2", "replied:que_2", "asked:que_3")
		r.sleep(time.Hour)
		r.expect("asked:que_2", "replied:que_2", "asked:que_3")
		r.replied(sse.FromFeed, "ses_Rcc", "que_3")
		r.sleep(QuestionSpacing)
		r.expect("asked:que_2", "replied:que_2", "asked:que_3", "replied:que_3", "asked:que_4")
	})
}

func TestGateHoldsQuestionsWhileAPermissionOfTheTreeIsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGateRig(t)
		r.permission("ses_Rcc", "per_1")
		r.settle()
		r.asked(sse.FromBroker, "ses_R", "que_1")
		r.asked(sse.FromBroker, "ses_S", "que_2") // another tree
		r.settle()
		r.expect("permission.asked:per_1", "asked:que_2")
		r.sleep(time.Hour)
		r.expect("permission.asked:per_1", "asked:que_2")
		r.permitted("ses_Rcc", "per_1")
		r.sleep(QuestionSpacing)
		r.expect("permission.asked:per_1", "asked:que_2", "permission.replied:per_1", "asked:que_1")
	})
}

func TestGateDropsAQuestionThatEndsWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGateRig(t)
		r.asked(sse.FromFeed, "ses_R", "que_1")
		r.settle()
		r.asked(sse.FromBroker, "ses_Rc", "que_2")
		r.asked(sse.FromFeed, "ses_R", "que_3")
		r.settle()
		r.replied(sse.FromBroker, "ses_Rc", "que_2") // answered on /ui while held
		r.replied(sse.FromFeed, "ses_R", "que_1")
		r.sleep(QuestionSpacing)
		r.expect("asked:que_1", "replied:que_2", "replied:que_1", "asked:que_3")
		r.asked(sse.FromBroker, "ses_Rc", "que_2") // a replay racing its end
		r.expect("asked:que_1", "replied:que_2", "replied:que_1", "asked:que_3")
	})
}

func TestGatePassesWhatTheTUICannotShowAndEverythingElse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGateRig(t)
		r.asked(sse.FromFeed, "ses_R", "que_1")
		r.settle()
		r.asked(sse.FromBroker, "ses_inbox", "que_2") // questiond says it is not the server's: never gated
		r.admit(sse.FromFeed, []byte(`data: {"type":"message.part.updated","properties":{"sessionID":"ses_R"}}`+"\n\n"))
		r.admit(sse.FromFeed, []byte(": a comment\n\n"))
		r.settle()
		r.expect("asked:que_1", "asked:que_2", "message.part.updated:", ":")
		r.admit(sse.FromBroker, gateFrame("question.asked", "ses_inbox", "id", "que_3")) // no note: looked up
		r.settle()
		r.expect("asked:que_1", "asked:que_2", "message.part.updated:", ":", "asked:que_3")
	})
}

func TestGateStopEndsItsLookups(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		blocked := blockingRoots{}
		g := NewGate(blocked)(func() { t.Error("woken after Stop") })
		if out := g.Admit(sse.NewFrame(sse.FromFeed, "", gateFrame("question.asked", "ses_R", "id", "que_1"))); len(out) != 0 {
			t.Fatalf("a question of a tree not known yet went out: %d frames", len(out))
		}
		synctest.Wait()
		g.Stop() // returns: the lookup under way ends
	})
}

// blockingRoots answers only once its caller gives up.
type blockingRoots struct{}

func (blockingRoots) Root(ctx context.Context, _ string) (string, bool, error) {
	<-ctx.Done()
	return "", false, ctx.Err()
}

// slowRoots answers for a session once the test lets it.
type slowRoots struct {
	treeRoots
	let map[string]chan struct{}
}

func (r *slowRoots) Root(ctx context.Context, id string) (string, bool, error) {
	<-r.let[id]
	return r.treeRoots.Root(ctx, id)
}

// Oldest first, even when the newer question's tree is known first.
func TestGateReleasesOldestFirstWhateverTreeIsKnownFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		roots := &slowRoots{
			treeRoots: treeRoots{parent: map[string]string{"ses_R": "", "ses_Rc": "ses_R"}},
			let:       map[string]chan struct{}{"ses_R": make(chan struct{}), "ses_Rc": make(chan struct{})},
		}
		r := &gateRig{t: t, wakes: make(chan struct{}, 100)}
		r.gate = NewGate(roots)(func() { r.wakes <- struct{}{} })
		t.Cleanup(r.gate.Stop)
		r.asked(sse.FromBroker, "ses_R", "que_1")
		r.asked(sse.FromBroker, "ses_Rc", "que_2")
		close(roots.let["ses_Rc"])
		r.settle()
		r.expect()
		close(roots.let["ses_R"])
		r.settle()
		r.expect("asked:que_1")
	})
}

// A stream that began while the TUI showed a server's question it never
// carried (the TUI connected again after questiond restarted) lets ours
// of that tree out; when the server's ends, ours is withdrawn from the
// TUI at once and announced again QuestionSpacing later, so it does not
// replace the server's in the same batch. Ours with a lower id than the
// one that ended (shown before it) stays, and so do other trees'.
func TestGateWithdrawsOursBehindAQuestionItNeverCarried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newGateRig(t)
		r.asked(sse.FromBroker, "ses_R", "que_1")  // shown before the one that ends: stays
		r.asked(sse.FromBroker, "ses_Rc", "que_5") // behind it in the TUI
		r.asked(sse.FromBroker, "ses_S", "que_6")  // another tree
		r.settle()
		r.expect("asked:que_1", "asked:que_6")
		r.replied(sse.FromBroker, "ses_R", "que_1")
		r.sleep(QuestionSpacing)
		r.expect("asked:que_1", "asked:que_6", "replied:que_1", "asked:que_5")
		r.out = nil

		// The TUI had que_3 of tree R from before this stream.
		r.replied(sse.FromFeed, "ses_R", "que_3")
		r.expect("replied:que_3", "rejected:que_5")
		r.sleep(QuestionSpacing - time.Millisecond)
		r.expect("replied:que_3", "rejected:que_5")
		r.sleep(time.Millisecond)
		r.expect("replied:que_3", "rejected:que_5", "asked:que_5")

		// An ending this stream has seen withdraws nothing, nor does one
		// of a question after ours (ours was shown before it).
		r.out = nil
		r.replied(sse.FromFeed, "ses_R", "que_3")
		r.replied(sse.FromFeed, "ses_S", "que_9")
		r.sleep(QuestionSpacing)
		r.expect("replied:que_3", "replied:que_9")
	})
}

// The withdrawal has the shape of the question.asked it withdraws: an
// envelope on /global/event, a bare event on /event.
func TestRejectedFrameKeepsTheStreamsShape(t *testing.T) {
	for name, tc := range map[string]struct{ asked, want string }{
		"global": {
			`data: {"directory":"/p","project":"global","payload":{"id":"evt_1","type":"question.asked","properties":{"id":"que_1","sessionID":"ses_R","questions":[]}}}` + "\n\n",
			`data: {"directory":"/p","payload":{"id":"evt_1","properties":{"requestID":"que_1","sessionID":"ses_R"},"type":"question.rejected"},"project":"global"}` + "\n\n",
		},
		"instance": {
			`data: {"id":"evt_1","type":"question.asked","properties":{"id":"que_1","sessionID":"ses_R","questions":[]}}` + "\n\n",
			`data: {"id":"evt_1","properties":{"requestID":"que_1","sessionID":"ses_R"},"type":"question.rejected"}` + "\n\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			got, ok := rejectedFrame(sse.NewFrame(sse.FromBroker, "", []byte(tc.asked)), "ses_R", "que_1")
			if !ok || string(got.Text()) != tc.want {
				t.Fatalf("rejectedFrame: %v %s\nwant %s", ok, got.Text(), tc.want)
			}
		})
	}
	if _, ok := rejectedFrame(sse.NewFrame(sse.FromBroker, "", []byte("data: not json\n\n")), "ses_R", "que_1"); ok {
		t.Fatal("rejectedFrame made a frame of one that is not JSON")
	}
}
