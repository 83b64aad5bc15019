package sse

import (
	"fmt"
	"slices"
)

// r3labs stream ids. Directory streams get a prefix so that no directory can
// be mistaken for the two fixed streams.
const (
	streamAll       = "all"    // /event without a directory
	streamGlobal    = "global" // /global/event
	directoryPrefix = "dir:"
)

// scope is what one subscriber asked for.
type scope struct {
	global    bool
	directory string // "" means every directory
}

// accepts reports whether a message of directory belongs on this scope's
// stream; it is the rule Publish routes by, applied to initial messages.
func (s scope) accepts(directory string) bool {
	return s.global || s.directory == "" || directory == "" || directory == s.directory
}

func (s scope) String() string {
	switch {
	case s.global:
		return "/global/event"
	case s.directory == "":
		return "/event"
	default:
		return "/event?directory=" + s.directory
	}
}

// streamFor returns the r3labs stream of sc, creating the stream of a new
// directory. Streams live until Close: r3labs strands every goroutine of a
// connected client when a stream is removed under it. The caller holds b.mu.
func (b *Broker) streamFor(sc scope) (string, error) {
	switch {
	case sc.global:
		return streamGlobal, nil
	case sc.directory == "":
		return streamAll, nil
	}
	if id, ok := b.scopes[sc.directory]; ok {
		return id, nil
	}
	if len(b.scopes) >= b.opts.MaxScopes {
		return "", fmt.Errorf("too many directories with event streams (limit %d)", b.opts.MaxScopes)
	}
	id := directoryPrefix + sc.directory
	b.srv.CreateStream(id)
	b.scopes[sc.directory] = id
	// A new slice, never an append in place: Publish ranges over the old one
	// without holding the lock.
	b.eventStreams = append(slices.Clip(b.eventStreams), id)
	return id, nil
}
