// Package console is the OpenCode TUI's operator console: the routes the
// TUI needs to attach to questiond (opencode attach URL) — config,
// providers, agents, sessions, their messages — and what its event streams
// see of the questions, one per session at a time (Console, told of every
// question by httpapi's event encoder, and Replay for a new stream).
//
// A session is a projection of the store: the console keeps summaries of
// the sessions it has shown while consoles watch, and reads the store for
// anything else.
//
// Lock order: Console.mu is taken first. While holding it the console reads
// the store (the store's own locks, which it never holds while calling out:
// it calls OnEnd after releasing them), asks the encoder's view of the
// store (httpapi.Events' mutex, held for a map lookup only), and publishes
// on the bus (the broker's lock, under which the broker calls nothing of
// ours: it runs a new stream's Replay with no lock held). The queue's
// mutex (orderedWork) guards its queue only and is never held while a job
// runs. Nothing takes Console.mu while holding any of these, so the order
// cannot invert.
package console
