package httpapi

import "time"

// Test-only access to the hooks, for the external test package. Set them
// before the server takes requests.

// SetOnKeyClaimed parks or observes a keyed create once it holds its key,
// before it looks the key up.
func SetOnKeyClaimed(s *Server, hook func(key string)) { s.onKeyClaimed = hook }

// SetOnGraceArmed observes a keyed POST /elicit whose caller dropped: its
// question now waits ReconnectGrace for a retry.
func SetOnGraceArmed(s *Server, hook func(id string)) { s.onGraceArmed = hook }

// SetAuthFailureWindow shortens the window over which failed
// authentications are summed up in one log line.
func SetAuthFailureWindow(s *Server, window time.Duration) { s.authLog.window = window }
