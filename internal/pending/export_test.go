package pending

// Test-only access to the hooks and internals, for the external test package.

// SetOnSettleEntered parks or observes every ending before it takes a lock.
func (m *Memory) SetOnSettleEntered(hook func(id string, how Ending)) { m.onSettleEntered = hook }

// SetOnWaitEntered parks or observes Wait after its lookup, before it blocks.
func (m *Memory) SetOnWaitEntered(hook func(id string)) { m.onWaitEntered = hook }

// Held reports how many questions the store still holds, pending or ended.
func (m *Memory) Held() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.entries)
}
