package middleware

import (
	"fmt"
	"net/http"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// Recoverer turns a handler panic into OpenCode's generic 500 with a
// reference logged to log. http.ErrAbortHandler is re-raised: it is how a
// handler asks net/http to drop the connection.
func Recoverer(log *zap.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				if v := recover(); v != nil {
					if v == http.ErrAbortHandler {
						panic(v)
					}
					wire.WriteError(log, w, r, fmt.Errorf("panic: %v", v))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}
