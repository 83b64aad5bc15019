package httpapi

import (
	"time"

	"github.com/questiond/questiond/internal/ask"
)

// Test-only access to the hooks, for the external test package. Set them
// before the server takes requests.

// SetOnKeyClaimed parks or observes a keyed create once it holds its key,
// before it looks the key up.
func SetOnKeyClaimed(s *Server, hook func(key string)) {
	s.questions.SetTestHooks(ask.TestHooks{KeyClaimed: hook})
}

// SetAuthFailureWindow shortens the window over which failed
// authentications are summed up in one log line.
func SetAuthFailureWindow(s *Server, window time.Duration) { s.authLog.SetWindow(window) }
