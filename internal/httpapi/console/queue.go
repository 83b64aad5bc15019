package console

import "sync"

// orderedWork runs functions one at a time, in the order they were handed
// over, on a goroutine of its own that exists only while there is work: the
// caller (a replica's change log tail) never waits for them.
type orderedWork struct {
	mu      sync.Mutex
	queue   []func()
	running bool
}

// do queues fn after everything queued before it.
func (w *orderedWork) do(fn func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.queue = append(w.queue, fn)
	if !w.running {
		w.running = true
		go w.run()
	}
}

func (w *orderedWork) run() {
	for {
		w.mu.Lock()
		if len(w.queue) == 0 {
			w.running = false
			w.mu.Unlock()
			return
		}
		fn := w.queue[0]
		w.queue[0] = nil
		w.queue = w.queue[1:]
		w.mu.Unlock()
		fn()
	}
}
