package sse

import "time"

// Hooks lets tests force interleavings; see testHooks. Set them before the
// broker serves anything.
func (b *Broker) SetHooks(registered, left func()) {
	b.hooks = testHooks{registered: registered, left: left}
}

// R3labsState reports what the r3labs server holds: the settings that must
// stay off and how many events each fixed stream has kept.
func (b *Broker) R3labsState() (autoReplay bool, ttl time.Duration, kept int) {
	for _, id := range []string{streamAll, streamGlobal} {
		kept += len(b.srv.CreateStream(id).Eventlog) // CreateStream returns the existing stream
	}
	return b.srv.AutoReplay, b.srv.EventTTL, kept
}

// FrameFrom is frameFrom, for a table test of what r3labs may write.
var FrameFrom = frameFrom
