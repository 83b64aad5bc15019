package ask

// TestHooks reach into the service at points tests need to park or
// observe; every one is nil in production. Set them with SetTestHooks
// before the service takes requests.
type TestHooks struct {
	// KeyClaimed runs once a keyed Ask holds its key, before the lookup.
	KeyClaimed func(key string)
	// GraceArmed runs once a keyed waiter dropped and its question waits
	// ReconnectGrace for a retry.
	GraceArmed func(id string)
	// BeforeWithdraw runs once a grace period has decided to withdraw a
	// question, before it does.
	BeforeWithdraw func(id string)
}

// SetTestHooks installs h; see TestHooks.
func (s *Service) SetTestHooks(h TestHooks) {
	s.onKeyClaimed, s.onGraceArmed, s.beforeWithdraw = h.KeyClaimed, h.GraceArmed, h.BeforeWithdraw
}

// GraceRecords counts the questions with keyed waiters or an armed grace
// period, for tests that check none is left behind.
func (s *Service) GraceRecords() int {
	s.graces.mu.Lock()
	defer s.graces.mu.Unlock()
	return len(s.graces.waits)
}
