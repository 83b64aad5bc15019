package session_test

import (
	"context"
	"errors"
	"maps"
	"sync"
)

var errJournal = errors.New("disk on fire")

// fakeJournal keeps records in a map. Its writes fail with errJournal while
// failing is set, and a Put for the key in park waits on it once.
type fakeJournal struct {
	mu      sync.Mutex
	records map[string][]byte
	failing bool
	loadErr error
	park    map[string]chan struct{} // closed by the test to let the Put through
	parked  chan string              // receives the key of each parked Put
}

func newFakeJournal() *fakeJournal {
	return &fakeJournal{records: make(map[string][]byte), park: make(map[string]chan struct{}), parked: make(chan string, 16)}
}

func (j *fakeJournal) Load(ctx context.Context) (map[string][]byte, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.loadErr != nil {
		return nil, j.loadErr
	}
	return maps.Clone(j.records), nil
}

func (j *fakeJournal) Put(ctx context.Context, key string, value []byte) error {
	j.mu.Lock()
	gate, parks := j.park[key]
	delete(j.park, key)
	j.mu.Unlock()
	if parks {
		j.parked <- key
		<-gate
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failing {
		return errJournal
	}
	j.records[key] = append([]byte(nil), value...)
	return nil
}

func (j *fakeJournal) Delete(ctx context.Context, key string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.failing {
		return errJournal
	}
	delete(j.records, key)
	return nil
}

func (j *fakeJournal) setFailing(failing bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.failing = failing
}

// parkPut makes the next Put of key wait until the returned func is called.
func (j *fakeJournal) parkPut(key string) (release func()) {
	gate := make(chan struct{})
	j.mu.Lock()
	j.park[key] = gate
	j.mu.Unlock()
	return sync.OnceFunc(func() { close(gate) })
}

func (j *fakeJournal) keys() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return sortedKeys(j.records)
}
