// Package sse fans questiond's bus events out to OpenCode clients as
// Server-Sent Events, on /event (one directory, or all of them) and on
// /global/event, in OpenCode's framing (`data: <json>\n\n`, nothing else).
//
// A subscriber that cannot keep up never slows anyone else down: Publish only
// appends a shared frame to each subscriber's bounded queue, and the request's
// own goroutine writes that queue to the network with a write deadline per
// frame. A full queue or a write that times out cuts that subscriber off.
package sse
