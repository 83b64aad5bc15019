// Package sse fans questiond's bus events out to OpenCode clients as
// Server-Sent Events, on /event (one directory, or all of them) and on
// /global/event, in OpenCode's framing (`data: <json>\n\n`, nothing else),
// alone or merged, whole frame by whole frame, into a stream from
// elsewhere (a Feed: upstream OpenCode's own event stream).
//
// A subscriber that cannot keep up never slows anyone else down: Publish only
// appends a shared frame to each subscriber's bounded queue, and the request's
// own goroutine writes that queue to the network with a write deadline per
// frame. A full queue or a write that times out cuts that subscriber off.
// A merged stream's feed is read by a goroutine of its own that appends to
// the same queue under the same bounds, so the feed's frames and the bus's
// never mix within a frame, and a client too slow for the feed is cut off
// too; the feed is closed, and its goroutine waited for, when the stream
// ends, and the stream ends when the feed does.
//
// A stream may carry a Filter (WithFilter) that sees every frame meant for
// it, from either source, in order, and passes, holds (to release later)
// or drops each: questiond uses it to keep the OpenCode TUI's questions one
// at a time per session tree.
//
// Locks: the Broker's mu, then a subscriber's mu (see Broker), then its
// Filter's own; a feed's reader takes only its subscriber's mu, and a Feed
// is closed, and a Filter stopped, holding none.
package sse
