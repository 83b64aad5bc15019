// Package pgstore keeps questiond's durable state in PostgreSQL, shared by
// several replicas, and tails the change log through which each replica
// learns what the others did.
//
// # Gap-free order
//
// Every creation and ending of a question appends one row to the changes
// table, in the same transaction as the change itself. A replica commits
// its changes in batches: those that arrive while a batch is committing
// go together in the next, one call of a schema function (questiond_apply)
// and one round trip, each change done or refused on its own (a limit, a
// taken key, an ending that lost); a lone change is a batch of one. (The
// one-change functions questiond_ask and questiond_end stay for replicas
// of an older questiond during an upgrade.) The row carries
// a number from a sequence (seq) and the id of its transaction (xid,
// pg_current_xact_id). The log's order is (xid, seq). The order needs
// no lock in common (only the total byte counter is one: see below), so
// commits may share WAL flushes (group commit); a sequence alone would not do for a reader, since numbers are handed out
// before commit and commits land in any order: a reader that passed
// number 6 would never see a 5 that committed after it.
//
// A tailer's position is a transaction id W: it has handed over every
// change of every transaction with an id below W. One read is one
// statement, so one snapshot S, and reads the changes with W <= xid < U
// for some U <= xmin(S), where xmin(S) (pg_snapshot_xmin) is the oldest
// transaction id still running when S was taken. Why nothing is skipped:
//
//   - A transaction with an id below xmin(S) had ended when S was taken:
//     committed, and then S sees all of its rows, or aborted, and none of
//     them will ever exist.
//   - Every transaction that begins later gets an id at least xmax(S)
//     (the next id to be handed out), which is at least xmin(S).
//   - So the changes with xid below xmin(S) are final when read: no
//     change can appear later below U, and reading on from U misses
//     nothing. A transaction still open (however long) holds U back at
//     its id; the changes above it wait, none is passed over.
//
// Ids are 64-bit (xid8, epoch included): they never wrap. A transaction
// is read whole (U only ever cuts between transactions) so that a batch
// never splits one.
//
// A crash of the server takes ids back: ids of transactions whose commits
// had not reached its disk (an aborted writer's, a notification's, which
// does not wait for the disk) are handed out again after it restarts, so
// a position may have passed ids that changes will be made by later. A
// change's own commit waits for the disk, so the last transaction a
// tailer handed over is below every id handed out after a crash. Hence a
// tailer that loses its connection goes back to one past that transaction
// (no change lies between there and its position, or it would have read
// it), and Journal.LoadedSeq is one past the last change a load saw, not
// its snapshot's safe position.
//
// Why the order keeps each question's asked before its ended: an ending
// updates the question's row, which it can only find once the creation
// committed; the ending's function gets its transaction id at that update,
// after the creation's transaction, which had its id before it committed,
// so xid(asked) < xid(ended). This holds because a batch is one statement
// in its own transaction, sent once every change in it was queued, and a
// replica queues an ending only of a question whose creation has
// committed (its own Create returns after the commit; other replicas'
// come from the log): the batch gets its id after that commit. (A
// transaction of several Puts, as at restore, gets its id at its first
// statement: an ending in it of a question another transaction created
// meanwhile could come first; restore only ends questions loaded before
// it began.)
//
// The price: a tailer reads no further than the oldest running
// transaction of the whole PostgreSQL server (every database's writers
// count), so a long writing transaction elsewhere on the server delays
// every replica's events (not its writes) until it ends.
//
// NOTIFY is not sent in a change's transaction: PostgreSQL serialises the
// commits of notifying transactions under one lock held through the
// commit's flush, which would undo the above. A batch sends its
// notification in a transaction of its own that does not wait for the
// disk, in the same write to the server as the batch (a pipeline: the
// server runs it as soon as the batch has committed, and Put returns after
// both), unless every request connection is taken. Those, transactions of
// several changes, and failures (whose transaction held the tailers back),
// are announced by a notifier goroutine on a connection of its own
// (several that commit meanwhile share one). A lost notification costs a
// poll interval.
//
// The cluster-wide limit on pending questions is counted in 32 stripes,
// each capped at its share of the limit (they add up to it), so that
// creations lock different rows: a creation takes the first stripe with
// room from one its id picks. The total never exceeds the limit; near it,
// a creation may be refused while a concurrent ending frees a place in a
// stripe it already tried. Every replica must use the same limit.
// The per-agent counter is one row per agent token, not counted for the
// unauthenticated owner (""), which has no limit.
//
// The byte budgets (pending.Options.MaxBytes, MaxBytesPerAgent) are checked
// twice: by the replica's store, against what it holds (every question of
// the cluster, as far as its tail has read), and then exactly, for the
// whole cluster, by questiond_apply in the creation's transaction, against
// counters kept beside the questions (migration 10): each record's weight
// (pending.Weigh), each agent's bytes in its pending_owners row, the total
// in the one row of held_bytes. A creation beyond a budget there first
// forgets its agent's oldest results (their records deleted, their
// forgetting logged, their keys kept in gone_keys, all in its transaction)
// if that makes room, else is refused with a *pending.BudgetError wrapping
// pending.ErrFull; two replicas creating at once cannot pass a budget
// together. An ending changes its question's weight (its answers count,
// its questions once) without a check, as in a store. held_bytes is one
// row: unlike the pending counters (striped), every batch that creates or
// ends takes its lock, last, until its commit, so batches of different
// replicas commit one after another (each still carries every change that
// queued meanwhile). The Idempotency-Keys of forgotten questions are kept in gone_keys, written
// with the deletion of their records (Journal.Forget) and read by Open.
//
// # Tailing
//
// A Tailer holds one connection that LISTENs on the changes channel; a
// notification (empty payload) wakes it, and it reads the rows (one read
// answers every notification received before it began). It also
// reads every PollInterval in case a notification was lost, every few
// milliseconds while a WaitFor waits for a running transaction, and after
// a lost connection it reconnects with backoff and catches up from its
// position. Changes older than KeepChanges are pruned, and the highest
// pruned id recorded (log_pruned); a tailer whose position is below it
// resynchronises from the records.
//
// # One replica
//
// A Mirror is one replica's question store: a pending.Store restored from
// the database (Journal) and kept in step by a Tailer (Follow). Its own
// changes are committed first, where a conditional write lets exactly one
// replica end a question; the others learn of it from the log.
//
// # One order on every stream
//
// Follow tells TailOptions.Announce of every change in the log's order,
// the replica's own changes included, once the mirror has applied it. A
// replica that publishes its event streams from there (httpapi.Events
// FromLog and Observed) publishes what every other replica publishes, in
// the same order, with no change left out: its own change waits on its
// streams for its turn in the log (about a millisecond after the commit,
// the NOTIFY's round trip). The Mirror's Create and Settle return only
// once the tailer has applied their change (Journal notes the number of
// each change it committed until then), so the acknowledgement that
// follows them finds the change on the replica's streams; the acting
// agent's wake-up and the webhooks, which go once from the committing
// replica, do not wait. A resync announces what it applies, creations first; a question
// it held pending whose record is gone (ended elsewhere and deleted by
// retention while the replica was cut off) ends here as rejected, and so
// does one whose ending the tail reads after its record was deleted. A
// forgetting (KindForgot, logged by the replica whose deletion removed the
// record; after the question's ending in the log, since a record is
// deleted only once it has ended) makes every other replica forget the
// result and remember its Idempotency-Key as gone
// (pending.Store.ObserveForgotten, which reads and writes only what the
// replica holds): a result one replica evicted is not served by another,
// and a retry under its key is told it is gone on every replica. A resync
// forgets the results it holds whose records are gone. The Announce callback runs on the tail's goroutine: it must never make a read
// that catches up with the log (Mirror.Peek reads what the replica holds).
package pgstore
