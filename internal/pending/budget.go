package pending

import (
	"fmt"
	"time"
)

// Byte budgets bound what questions cost in memory (and in the journal):
// every entry the store holds, pending or with its result retained, counts
// its weight against its owner's budget and the store's. A Create beyond
// either first forgets its owner's own oldest results, then, if pending
// questions alone are too many bytes, is refused with a *BudgetError: one
// agent never evicts another's results to make room.

// DefaultMaxBytes is the store's byte budget when Options.MaxBytes is zero.
const DefaultMaxBytes int64 = 1 << 30

// DefaultMaxBytesPerAgent is each agent's byte budget when
// Options.MaxBytesPerAgent is zero: an eighth of the total, so that eight
// agents at their budget fit in it.
const DefaultMaxBytesPerAgent = DefaultMaxBytes / 8

// questionOverhead is what a question costs beyond its text: ids, times,
// the entry, its indexes.
const questionOverhead = 1024

// The budgets a BudgetError names.
const (
	BudgetTotal = "total"
	BudgetAgent = "agent"
)

// BudgetError refuses a Create that would take Agent (Budget BudgetAgent)
// or the store (BudgetTotal) beyond Limit bytes: it already holds Held and
// the question weighs Need. It wraps ErrOverBudget.
type BudgetError struct {
	Budget string
	Agent  string
	Limit  int64
	Held   int64
	Need   int64
}

func (e *BudgetError) Error() string {
	if e.Budget == BudgetAgent {
		return fmt.Sprintf("agent %q holds %d bytes of questions and results, and %d more would pass its budget of %d", e.Agent, e.Held, e.Need, e.Limit)
	}
	return fmt.Sprintf("questiond holds %d bytes of questions and results, and %d more would pass its budget of %d", e.Held, e.Need, e.Limit)
}

func (e *BudgetError) Unwrap() error { return ErrOverBudget }

// weigh is what q counts against the budgets: the bytes of its text
// (message, schema, the questions shown, the answers) plus a fixed
// overhead. A pending question's questions count twice, as operators'
// lists keep them encoded too (Listing); an ended question keeps its
// message inside its first question's text (see shareText), so it counts
// once.
func weigh(q *Question) int64 {
	n := questionOverhead + len(q.ID) + len(q.SessionID) + len(q.AskingSessionID) + len(q.Directory) +
		len(q.Owner) + len(q.Client) + len(q.Title) + len(q.Schema) + len(q.IdempotencyKey) + len(q.RequestHash)
	if q.MCPTool != nil {
		n += len(q.MCPTool.Server) + len(q.MCPTool.Name)
	}
	shared := false
	for i, info := range q.Questions {
		text := len(info.Question) + len(info.Header)
		for _, o := range info.Options {
			text += len(o.Label) + len(o.Description)
		}
		if q.Ended == nil {
			text *= 2
		}
		n += text
		if i == 0 && sharesMessage(q) {
			shared = true
		}
	}
	if !shared {
		n += len(q.Message)
	}
	if q.Ended != nil {
		for k, v := range q.Ended.Result.Content {
			n += len(k) + contentSize(v)
		}
		for _, answers := range [][][]string{q.Ended.Answers, q.Ended.Filled} {
			for _, a := range answers {
				for _, s := range a {
					n += len(s)
				}
			}
		}
	}
	return int64(n)
}

// Weigh is what q counts against the byte budgets, as the store counts it:
// for a journal that enforces the budgets across stores sharing it.
func Weigh(q *Question) int64 { return weigh(q) }

// contentSize is about what one answer in a result holds, without
// encoding it: text and lists of text by their length, anything else (a
// number, a boolean) as a word or two.
func contentSize(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []string:
		n := 0
		for _, s := range v {
			n += len(s) + 16
		}
		return n
	default:
		return 16
	}
}

// charge counts e against the budgets. Callers hold mu for writing.
func (m *Store) charge(e *entry) {
	m.release(e)
	q := e.q
	if e.outcome != nil {
		c := *e.q
		c.Ended = e.outcome
		q = &c
	}
	e.charged = weigh(q)
	m.bytes += e.charged
	m.ownerBytes[e.q.Owner] += e.charged
}

// release stops counting e against the budgets. Callers hold mu for writing.
func (m *Store) release(e *entry) {
	if e.charged == 0 {
		return
	}
	m.bytes -= e.charged
	if m.ownerBytes[e.q.Owner] -= e.charged; m.ownerBytes[e.q.Owner] <= 0 {
		delete(m.ownerBytes, e.q.Owner)
	}
	e.charged = 0
}

// admit checks that e, about to be created, fits the budgets, forgetting
// its owner's oldest results to make room, and charges it. Results are
// forgotten only when that makes room: a create refused anyway leaves them.
// The unauthenticated owner ("") has no budget of its own; the total
// applies to it too. Callers hold mu for writing.
func (m *Store) admit(e *entry, now time.Time) error {
	owner, need := e.q.Owner, weigh(e.q)
	agentOver := owner != "" && m.ownerBytes[owner]+need > m.maxBytesPerAgent
	totalOver := m.bytes+need > m.maxBytes
	if agentOver || totalOver {
		reclaimable := m.retainedBytes(owner)
		if agentOver && m.ownerBytes[owner]-reclaimable+need > m.maxBytesPerAgent {
			return &BudgetError{Budget: BudgetAgent, Agent: owner, Limit: m.maxBytesPerAgent, Held: m.ownerBytes[owner], Need: need}
		}
		if m.bytes-reclaimable+need > m.maxBytes {
			return &BudgetError{Budget: BudgetTotal, Agent: owner, Limit: m.maxBytes, Held: m.bytes, Need: need}
		}
		for (owner != "" && m.ownerBytes[owner]+need > m.maxBytesPerAgent || m.bytes+need > m.maxBytes) && m.evictOldestOf(owner, now) {
		}
	}
	m.charge(e)
	return nil
}

// retainedBytes is what owner's retained results count. Callers hold mu.
func (m *Store) retainedBytes(owner string) int64 {
	var n int64
	if owned := m.ended.byOwner[owner]; owned != nil {
		for el := owned.Front(); el != nil; el = el.Next() {
			n += el.Value.(*entry).charged
		}
	}
	return n
}

// evictOldestOf forgets owner's oldest retained result, and reports
// whether there was one. Callers hold mu for writing.
func (m *Store) evictOldestOf(owner string, now time.Time) bool {
	v := m.ended.oldestOf(owner)
	if v == nil {
		return false
	}
	m.evict(v, now)
	return true
}

// Bytes returns how many bytes of questions and results owner holds, and
// the store as a whole, as the budgets count them.
func (m *Store) Bytes(owner string) (agent, total int64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ownerBytes[owner], m.bytes
}
