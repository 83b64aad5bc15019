// Package sse fans questiond's bus events out to OpenCode clients as
// Server-Sent Events, on /event (one directory, or all of them) and on
// /global/event.
//
// The fan-out runs on github.com/r3labs/sse/v2, configured and wrapped so that
// none of its known pitfalls can happen: nothing is replayed or kept, streams
// are created once and never removed while clients are connected, the request
// it sees is rebuilt so a client cannot make it fail, and the bytes it writes
// are rewritten into OpenCode's framing (`data: <json>\n\n`, nothing else).
//
// A subscriber that cannot keep up never slows anyone else down: r3labs writes
// into an in-memory wrapper, finished frames go into a bounded per-subscriber
// queue, and a goroutine per subscriber writes them to the network with a
// write deadline. A full queue or a failed write cuts that subscriber off.
package sse
