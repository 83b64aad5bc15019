package pending_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/questiond/questiond/internal/pending"
)

// errDisk is what a failing fakeJournal reports, wrapped as a real journal
// would wrap it.
var errDisk = fmt.Errorf("%w: injected disk failure", pending.ErrUnavailable)

// fakeJournal is an in-memory Journal. It keeps records as JSON, so nothing
// the store hands it stays shared, and lets a test fail or park operations.
type fakeJournal struct {
	mu      sync.Mutex
	records map[string][]byte
	closed  bool
	calls   map[string]int // operation → how many times it was called

	// failPut and failDelete, when set, decide whether an operation fails;
	// they run under mu. onPut and onDelete run before the operation, with
	// no lock held, so a test can park it.
	failPut    func(qs []*pending.Question) error
	failDelete func(ids []string) error
	onPut      func(qs []*pending.Question)
	onDelete   func(ids []string)
}

var _ pending.Journal = (*fakeJournal)(nil)

func newFakeJournal() *fakeJournal {
	return &fakeJournal{records: make(map[string][]byte), calls: make(map[string]int)}
}

func (j *fakeJournal) Load(ctx context.Context) ([]*pending.Question, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls["load"]++
	if j.closed {
		return nil, fmt.Errorf("load: %w: closed", pending.ErrUnavailable)
	}
	qs := make([]*pending.Question, 0, len(j.records))
	for _, data := range j.records {
		var q pending.Question
		if err := json.Unmarshal(data, &q); err != nil {
			return nil, fmt.Errorf("load: %w: %w", pending.ErrUnavailable, err)
		}
		qs = append(qs, &q)
	}
	return qs, nil
}

func (j *fakeJournal) Put(ctx context.Context, qs ...*pending.Question) error {
	if hook := j.hooks().onPut; hook != nil {
		hook(qs)
	}
	encoded := make([][]byte, len(qs))
	for i, q := range qs {
		data, err := json.Marshal(q)
		if err != nil {
			return fmt.Errorf("put: %w: %w", pending.ErrUnavailable, err)
		}
		encoded[i] = data
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls["put"]++
	if j.closed {
		return fmt.Errorf("put: %w: closed", pending.ErrUnavailable)
	}
	if j.failPut != nil {
		if err := j.failPut(qs); err != nil {
			return err
		}
	}
	for i, q := range qs {
		j.records[q.ID] = encoded[i]
	}
	return nil
}

func (j *fakeJournal) Delete(ctx context.Context, ids ...string) error {
	if hook := j.hooks().onDelete; hook != nil {
		hook(ids)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls["delete"]++
	if j.closed {
		return fmt.Errorf("delete: %w: closed", pending.ErrUnavailable)
	}
	if j.failDelete != nil {
		if err := j.failDelete(ids); err != nil {
			return err
		}
	}
	for _, id := range ids {
		delete(j.records, id)
	}
	return nil
}

func (j *fakeJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.closed = true
	return nil
}

type journalHooks struct {
	onPut    func([]*pending.Question)
	onDelete func([]string)
}

func (j *fakeJournal) hooks() journalHooks {
	j.mu.Lock()
	defer j.mu.Unlock()
	return journalHooks{j.onPut, j.onDelete}
}

// set changes the fake's behaviour under its lock.
func (j *fakeJournal) set(change func(j *fakeJournal)) {
	j.mu.Lock()
	defer j.mu.Unlock()
	change(j)
}

func (j *fakeJournal) count(op string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls[op]
}

// record returns the stored record of id, or nil.
func (j *fakeJournal) record(id string) *pending.Question {
	j.mu.Lock()
	defer j.mu.Unlock()
	data, ok := j.records[id]
	if !ok {
		return nil
	}
	var q pending.Question
	if err := json.Unmarshal(data, &q); err != nil {
		panic(err)
	}
	return &q
}

func (j *fakeJournal) ids() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	ids := make([]string, 0, len(j.records))
	for id := range j.records {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// failEndingsOf makes the next n commits of an ending of id fail.
func failEndingsOf(id string, n int) func([]*pending.Question) error {
	return func(qs []*pending.Question) error {
		for _, q := range qs {
			if q.ID == id && q.Ended != nil && n > 0 {
				n--
				return errDisk
			}
		}
		return nil
	}
}

func failAlways[T any](T) error { return errDisk }
