package middleware

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/httprate"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// RateLimit limits each client to perMinute requests a minute (none when
// perMinute is not positive), telling them apart by key; refused hears of
// every request it refuses (429 with Retry-After).
func RateLimit(perMinute int, key func(*http.Request) string, refused func()) func(http.Handler) http.Handler {
	n := perMinute
	if n <= 0 {
		return func(next http.Handler) http.Handler { return next }
	}
	return httprate.LimitBy(n, time.Minute, func(r *http.Request) (string, error) { return key(r), nil },
		httprate.WithLimitHandler(func(w http.ResponseWriter, r *http.Request) {
			refused()
			if w.Header().Get("Retry-After") == "" {
				w.Header().Set("Retry-After", strconv.Itoa(60))
			}
			wire.WriteStatus(w, wire.NewStatus(http.StatusTooManyRequests, "TooManyRequests",
				fmt.Sprintf("more than %d requests in a minute from this client; slow down (--rate-limit)", n)))
		}))
}
