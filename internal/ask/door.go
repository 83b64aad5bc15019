package ask

import (
	"context"
	"sync"
)

// Door counts the operations of one kind in progress and, once shut,
// refuses new ones, so a shutdown can wait for exactly those already inside.
// Entering and the check that the door is open are one step: nothing slips
// in between a shutdown's check and its count.
type Door struct {
	mu     sync.Mutex
	shut   bool
	inside int
	empty  chan struct{} // closed once the door is shut and nobody is inside
}

// NewDoor returns an open door with nobody inside.
func NewDoor() *Door { return &Door{empty: make(chan struct{})} }

// Enter counts one operation in, unless the door is shut; call Leave when
// it is done.
func (d *Door) Enter() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.shut {
		return false
	}
	d.inside++
	return true
}

// Leave counts one operation out.
func (d *Door) Leave() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inside--
	if d.shut && d.inside == 0 {
		close(d.empty)
	}
}

// Close refuses every later Enter.
func (d *Door) Close() {
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

// CloseAndWait closes the door and returns once every operation inside has
// left, or with ctx's error.
func (d *Door) CloseAndWait(ctx context.Context) error {
	d.Close()
	select {
	case <-d.empty:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
