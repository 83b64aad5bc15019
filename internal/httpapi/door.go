package httpapi

import (
	"context"
	"sync"
)

// door counts the operations of one kind in progress and, once shut,
// refuses new ones, so a shutdown can wait for exactly those already inside.
// Entering and the check that the door is open are one step: nothing slips
// in between a shutdown's check and its count.
type door struct {
	mu     sync.Mutex
	shut   bool
	inside int
	empty  chan struct{} // closed once the door is shut and nobody is inside
}

func newDoor() *door { return &door{empty: make(chan struct{})} }

// enter counts one operation in, unless the door is shut; call leave when
// it is done.
func (d *door) enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.shut {
		return false
	}
	d.inside++
	return true
}

func (d *door) leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inside--
	if d.shut && d.inside == 0 {
		close(d.empty)
	}
}

// close refuses every later enter.
func (d *door) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.shut {
		return
	}
	d.shut = true
	if d.inside == 0 {
		close(d.empty)
	}
}

// closeAndWait closes the door and returns once every operation inside has
// left, or with ctx's error.
func (d *door) closeAndWait(ctx context.Context) error {
	d.close()
	select {
	case <-d.empty:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
