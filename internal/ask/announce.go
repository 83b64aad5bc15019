package ask

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pending"
)

// Listener hears of every question asked and every ending, each once: a
// question's Asked comes before its Ended. It is called on the goroutine
// that asked or ended the question, which waits for it, so it must not
// block (an event encoder publishes to a bus that never waits; package
// notify queues and returns).
type Listener interface {
	Asked(q *pending.Question)
	Ended(q *pending.Question)
}

// EndingRepeater is a Listener that can tell its clients again how a
// question ended, for Service.RepeatEnding. A listener without it (webhooks,
// metrics) hears of each ending once.
type EndingRepeater interface {
	RepeatEnding(q *pending.Question)
}

// announceWait bounds how long an ending waits for its question's Asked to
// be told; telling is in memory, so this only matters if a listener is
// wedged, and then the ending is told anyway.
const announceWait = 5 * time.Second

// Announcements tells listeners of questions asked and ended in an order
// they can rely on: a question's Asked always before its Ended, even when it
// ends (a timeout, a fast operator) while it is still being announced.
// Listeners are told in the order given. Its Ended is the store's OnEnd:
// build it before the store, whose endings at open (questions overdue
// while questiond was down) it tells too.
type Announcements struct {
	log       *zap.Logger
	listeners []Listener

	mu         sync.Mutex
	announcing map[string]chan struct{} // closed once every listener heard Asked
}

// NewAnnouncements returns announcements told to listeners, in order.
func NewAnnouncements(log *zap.Logger, listeners ...Listener) *Announcements {
	if log == nil {
		log = zap.NewNop()
	}
	return &Announcements{log: log.Named("announce"), listeners: listeners, announcing: map[string]chan struct{}{}}
}

// begin marks id as being announced, before its question is stored; finish
// ends that once its Asked is told or its creation failed.
func (a *Announcements) begin(id string) {
	a.mu.Lock()
	a.announcing[id] = make(chan struct{})
	a.mu.Unlock()
}

func (a *Announcements) finish(id string) {
	a.mu.Lock()
	if gate, ok := a.announcing[id]; ok {
		close(gate)
		delete(a.announcing, id)
	}
	a.mu.Unlock()
}

// asked tells every listener of q, just stored.
func (a *Announcements) asked(q *pending.Question) {
	for _, l := range a.listeners {
		l.Asked(q)
	}
}

// Ended tells every listener how q ended, once its Asked, if it is being
// announced, has been told. Pass it to the store as its OnEnd.
func (a *Announcements) Ended(q *pending.Question) {
	a.mu.Lock()
	gate := a.announcing[q.ID]
	a.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-time.After(announceWait):
			a.log.Warn("question ended before it was announced", zap.String("id", q.ID))
		}
	}
	for _, l := range a.listeners {
		l.Ended(q)
	}
}

// repeatEnding tells every listener that repeats endings how q ended, again.
func (a *Announcements) repeatEnding(q *pending.Question) {
	for _, l := range a.listeners {
		if r, ok := l.(EndingRepeater); ok {
			r.RepeatEnding(q)
		}
	}
}
