// Package pending keeps the questions that agents have asked and that no
// operator has settled yet, and lets agents wait for their outcome.
//
// A question ends exactly once: the first of reply, reject, timeout,
// withdrawal, disconnect or shutdown wins, and every later attempt gets an
// error wrapping [ErrNotFound]. Each ending is reported once through
// [Options.OnEnd], outside the store's locks, so the callback may
// publish events or call back into the store.
//
// Ended questions stay readable for [Options.Retention] so an agent that
// reconnects can still collect its result; after that they are forgotten. At
// most [Options.MaxRetained] of them are kept, and at most
// [Options.MaxRetainedPerAgent] of one agent's: beyond either, a result is
// forgotten early (evicted), and reads of it fail exactly as for one past
// retention, so memory does not grow with the request rate. The agent
// beyond its own bound, or holding the most results, forgets its own
// oldest, so one agent's churn never evicts another's result first.
//
// Memory is bounded in bytes too: every question held, pending or ended,
// counts its text against its agent's and the store's byte budgets
// ([Options.MaxBytesPerAgent], [Options.MaxBytes]); a Create beyond either
// forgets its agent's oldest results if that makes room, and otherwise
// fails with a [BudgetError]. An ended question keeps its message once and
// drops its schema.
//
// The Idempotency-Key of a forgotten question is remembered for
// [Options.KeyRetention] more ([GoneKey]; in the journal too when it is a
// [KeyJournal]), so that [Store.FindKey] tells a retry its result is gone
// ([KeyGoneError], [ErrGone]) instead of letting it ask again.
//
// # Durability
//
// [New] keeps everything in memory. [Open] builds the same store on a
// [Journal], which holds the durable record of every question: a creation or
// an ending is committed to the journal before it is acknowledged, and a
// failed commit changes nothing and returns an error wrapping
// [ErrUnavailable]. Futures stay channels in memory. [Open] restores pending
// questions (their deadlines keep counting), times out those whose deadline
// passed meanwhile, and keeps ended ones readable for the rest of their
// retention, the newest MaxRetained of them. Forgotten questions are deleted
// from the journal too; one whose deletion a crash interrupted is forgotten
// again by the next Open. [Bolt] is the embedded journal, one bbolt file with
// a write-ahead log beside it (a commit is one synced append to the log; the
// log is copied into the file in the background, replayed by [OpenBolt], and
// removed by Close); the caller opens it, and closes it after the store.
//
// Every method takes a context and returns an error, even where the in-memory
// store cannot fail, so that a networked backend can implement the same
// surface. Consumers declare the interface they need.
package pending
