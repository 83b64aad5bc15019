// Package bridge relays MCP messages between a host (the MCP client that
// launched `questiond bridge`) and an upstream MCP server, passing every
// message through unchanged except the upstream's elicitations, which it
// asks a human through questiond.
//
// The upstream is a child process over stdio (Command) or a server over
// Streamable HTTP (StreamableHTTP, our own transport: the SDK's client
// transport learns the session's protocol and opens its event stream only
// when the SDK's own client drives it). The relay works on JSON-RPC
// messages (the go-sdk's Connection), not on the SDK's client and server: everything it does not understand must pass
// as it came, and the SDK has no proxy. Requests are sent on under ids of
// the relay's own in each direction (see idTable), so the host's and the
// upstream's ids can never collide with each other or with the requests the
// relay makes itself; responses and cancellations are mapped back.
//
// Over stdio (the host's side always, the upstream's with a COMMAND) the
// relay uses connections of its own (StdioTransport, CommandTransport):
// a message it only passes on goes as its frame came with its id
// rewritten, read and written on the relay's own goroutines with raw
// system calls; every other is decoded as the SDK's connections decode it
// (relay_fast.go, frame.go, lines.go, stdio.go).
//
// The host's initialize goes upstream with its capabilities plus
// elicitation, and the upstream's answer comes back as it is: the host sees
// the upstream's own server info, capabilities and instructions. An
// elicitation/create from the upstream becomes a questiond question (keyed
// by the client package, so a lost connection never asks twice); the
// operator's accept, decline or cancel is its result. With
// Options.PreferHost, a host that declared elicitation itself answers
// instead.
//
// 2026-07-28 input requests, URL mode and URLElicitationRequiredError are
// asked the same way (inputs.go, url.go, urlrequired.go); while a question
// waits, the host hears progress on the calls it holds up (progress.go).
//
// Lifecycles: the upstream cancelling its request, or the host cancelling
// the last call it has in flight, withdraws the question. The relay ends
// when either side does; the questions it asked are withdrawn before Run
// returns.
package bridge
