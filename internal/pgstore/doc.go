// Package pgstore keeps questiond's durable state in PostgreSQL, shared by
// several replicas, and tails the change log through which each replica
// learns what the others did.
//
// # Gap-free order
//
// Every creation and ending of a question appends one row to the changes
// table, in the same transaction as the change itself: one call of a schema
// function (questiond_ask, questiond_end), one round trip. Its sequence
// number comes from the one row of log_head, incremented in that call: the
// row lock is held until the commit, so transactions take numbers one after
// another and commit in number order. A reader that sees
// change n therefore already sees every change before it, and a tailer
// reading "seq > last ORDER BY seq" never skips a row that commits later
// (a bigserial would: its numbers are handed out before commit, and
// commits land in any order). The price is that commits of changes are
// serialised, one WAL flush after another; NOTIFY, which the same
// transactions send, serialises commits anyway.
//
// # Tailing
//
// A Tailer holds one connection that LISTENs on the changes channel; each
// change's transaction notifies it with just the sequence number (payloads
// stay far under PostgreSQL's 8000-byte limit), and it reads the rows. It
// also reads every PollInterval in case a notification was lost, and after
// a lost connection it reconnects with backoff and catches up from the last
// number it applied. Changes older than KeepChanges are pruned; a tailer
// that finds its position pruned resynchronises from the records.
//
// # One replica
//
// A Mirror is one replica's question store: a pending.Memory restored from
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
// retention while the replica was cut off) ends here as rejected.
package pgstore
