// Package ident makes OpenCode-style identifiers: a prefix, an underscore, 12 hex
// digits of time and counter, and 14 random base62 characters, 30 characters in
// all for a three-letter prefix (que_2290d9f660010JHxtaPXkLI85Z).
//
// Ascending ids sort by creation time as plain strings, which is what OpenCode
// clients rely on to show questions first-in first-out; descending ids (used for
// sessions) sort newest first.
package ident

import (
	"crypto/rand"
	"crypto/sha256"
	"strings"
	"sync"
	"time"
)

// Prefixes used by questiond; they are OpenCode's own.
const (
	Question = "que"
	Event    = "evt"
	Session  = "ses"
	Message  = "msg"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Generator hands out identifiers. The zero value is ready to use and safe for
// concurrent use.
type Generator struct {
	mu      sync.Mutex
	lastMS  int64
	counter int64
	now     func() time.Time // nil means time.Now; tests pin the clock
}

var std Generator

// Ascending returns a new identifier that sorts after every earlier ascending
// identifier made by this process.
func Ascending(prefix string) string { return std.Ascending(prefix) }

// Descending returns a new identifier that sorts before every earlier
// descending identifier made by this process.
func Descending(prefix string) string { return std.Descending(prefix) }

// Ascending returns an identifier that sorts after every earlier one from g.
func (g *Generator) Ascending(prefix string) string { return g.make(prefix, false) }

// Descending returns an identifier that sorts before every earlier one from g.
func (g *Generator) Descending(prefix string) string { return g.make(prefix, true) }

func (g *Generator) make(prefix string, descending bool) string {
	v := g.next()
	if descending {
		v = ^v
	}
	var b strings.Builder
	b.Grow(len(prefix) + 1 + 12 + 14)
	b.WriteString(prefix)
	b.WriteByte('_')
	const hex = "0123456789abcdef"
	for i := 0; i < 6; i++ {
		by := byte(uint64(v) >> (40 - 8*i))
		b.WriteByte(hex[by>>4])
		b.WriteByte(hex[by&0x0f])
	}
	var rnd [randomChars]byte
	_, _ = rand.Read(rnd[:]) // crypto/rand.Read never fails on supported platforms
	for _, r := range rnd {
		b.WriteByte(base62[int(r)%len(base62)])
	}
	b.WriteString(tag(b.String()))
	return b.String()
}

// The 14 base62 characters of an Ascending or Descending id are 8 random
// ones and a tag of 6 computed from everything before it, so that Issued
// knows questiond's ids from another OpenCode server's (in front of one,
// questiond answers its own replies and forwards the rest) without a store.
// The 12 hex digits already make ids unique; 8 random characters keep
// them unguessable; another server's id passes for one of questiond's once
// in 62^6 (5.7e10).
const (
	randomChars = 8
	tagChars    = 6
)

// tag is the tag of an id that begins with head.
func tag(head string) string {
	sum := sha256.Sum256([]byte("questiond\x00" + head))
	var t [tagChars]byte
	for i := range t {
		t[i] = base62[int(sum[i])%len(base62)]
	}
	return string(t[:])
}

// Issued reports whether id was made by Ascending or Descending, by this
// process or any other questiond (replicas, earlier runs): its tag matches.
// Ids questiond made before tags existed, Derived ids and other servers'
// ids are not.
func Issued(id string) bool {
	if len(id) < 1+12+randomChars+tagChars {
		return false
	}
	cut := len(id) - tagChars
	return id[cut:] == tag(id[:cut])
}

// Derived returns the identifier that name stands for: the same on every
// call, in every process, with the shape of the others (its 12 hex digits
// and 14 base62 characters come from a SHA-256 of name), so replicas and
// restarts agree on it without storing it. It carries no time: it does not
// sort with Ascending or Descending ones.
func Derived(prefix, name string) string {
	sum := sha256.Sum256([]byte(name))
	var b strings.Builder
	b.Grow(len(prefix) + 1 + 12 + 14)
	b.WriteString(prefix)
	b.WriteByte('_')
	const hex = "0123456789abcdef"
	for _, by := range sum[:6] {
		b.WriteByte(hex[by>>4])
		b.WriteByte(hex[by&0x0f])
	}
	for _, by := range sum[6:20] {
		b.WriteByte(base62[int(by)%len(base62)])
	}
	return b.String()
}

// next returns ms*4096+counter, where counter restarts at 1 each millisecond. A
// counter that overflows 4096 in one millisecond borrows the next millisecond,
// so ids stay strictly increasing even under heavy load.
func (g *Generator) next() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now
	if g.now != nil {
		now = g.now
	}
	ms := now().UnixMilli()
	if ms > g.lastMS {
		g.lastMS = ms
		g.counter = 0
	}
	g.counter++
	if g.counter >= 4096 {
		g.lastMS++
		g.counter = 1
	}
	return g.lastMS*4096 + g.counter
}

// HasPrefix reports whether id starts with prefix followed by an underscore.
func HasPrefix(id, prefix string) bool {
	return len(id) > len(prefix) && strings.HasPrefix(id, prefix) && id[len(prefix)] == '_'
}
