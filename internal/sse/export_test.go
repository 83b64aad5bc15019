package sse

// Hooks lets tests force interleavings; see testHooks. Set them before the
// broker serves anything.
func (b *Broker) SetHooks(registered, left func()) {
	b.hooks = testHooks{registered: registered, left: left}
}

// SetPumpHook sets the pumping hook; see testHooks.
func (b *Broker) SetPumpHook(pumping func()) { b.hooks.pumping = pumping }

// SetParkHook sets the parked hook; see testHooks.
func (b *Broker) SetParkHook(parked func()) { b.hooks.parked = parked }
