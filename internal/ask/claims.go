package ask

import "sync"

// keyClaims are the Idempotency-Keys whose request is being created right
// now, so that a second request with the same key waits its turn
// (ErrKeyInFlight) instead of racing the first.
type keyClaims struct {
	mu   sync.Mutex
	held map[claim]struct{}
}

type claim struct{ owner, key string }

// take claims c, or fails with ErrKeyInFlight; release gives it back.
func (k *keyClaims) take(c claim) (release func(), err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, busy := k.held[c]; busy {
		return nil, ErrKeyInFlight
	}
	if k.held == nil {
		k.held = make(map[claim]struct{})
	}
	k.held[c] = struct{}{}
	return func() {
		k.mu.Lock()
		delete(k.held, c)
		k.mu.Unlock()
	}, nil
}
