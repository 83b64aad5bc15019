package sse

// Hooks lets tests force interleavings; see testHooks. Set them before the
// broker serves anything.
func (b *Broker) SetHooks(registered, left func()) {
	b.hooks = testHooks{registered: registered, left: left}
}
