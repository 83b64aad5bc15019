package pending

import "container/list"

// retainedQueue is the ended entries whose results are retained, in ending
// order (which is expiry order), as a whole and per owner, so that a bound
// on retained results can evict one agent's results without touching
// another's, and an eviction from the middle costs O(1).
type retainedQueue struct {
	all     *list.List            // *entry, oldest ending first
	byOwner map[string]*list.List // the same entries, per Question.Owner
}

func newRetainedQueue() retainedQueue {
	return retainedQueue{all: list.New(), byOwner: make(map[string]*list.List)}
}

// push appends e, which just ended (or was restored ended).
func (r *retainedQueue) push(e *entry) {
	e.endedElem = r.all.PushBack(e)
	owned := r.byOwner[e.q.Owner]
	if owned == nil {
		owned = list.New()
		r.byOwner[e.q.Owner] = owned
	}
	e.ownerElem = owned.PushBack(e)
}

// remove takes e out of the queue; an entry not in it is left alone.
func (r *retainedQueue) remove(e *entry) {
	if e.endedElem == nil {
		return
	}
	r.all.Remove(e.endedElem)
	e.endedElem = nil
	if owned := r.byOwner[e.q.Owner]; owned != nil {
		owned.Remove(e.ownerElem)
		if owned.Len() == 0 {
			delete(r.byOwner, e.q.Owner)
		}
	}
	e.ownerElem = nil
}

// front is the oldest retained result, or nil.
func (r *retainedQueue) front() *entry {
	if el := r.all.Front(); el != nil {
		return el.Value.(*entry)
	}
	return nil
}

// oldestOf is owner's oldest retained result, or nil.
func (r *retainedQueue) oldestOf(owner string) *entry {
	if owned := r.byOwner[owner]; owned != nil {
		return owned.Front().Value.(*entry)
	}
	return nil
}

// held is how many results owner has retained.
func (r *retainedQueue) held(owner string) int {
	if owned := r.byOwner[owner]; owned != nil {
		return owned.Len()
	}
	return 0
}

// victim is the result to forget first when the queue holds more than its
// bounds allow, or nil when it does not: the oldest result of an owner
// beyond perOwner, else, beyond total, the oldest result of the owner who
// holds the most (owner, the agent whose result just joined, on a tie). So
// an agent that churns questions forgets its own results, never another's
// while it holds more than they do. The unauthenticated owner ("") has no
// bound of its own.
func (r *retainedQueue) victim(owner string, perOwner, total int) *entry {
	if owner != "" && r.held(owner) > perOwner {
		return r.oldestOf(owner)
	}
	if r.all.Len() <= total {
		return nil
	}
	heaviest, most := owner, r.held(owner)
	for o, owned := range r.byOwner {
		if owned.Len() > most {
			heaviest, most = o, owned.Len()
		}
	}
	return r.oldestOf(heaviest)
}
