package httpapi

import (
	"fmt"
	"net/http"
)

// recoverer turns a handler panic into OpenCode's generic 500 with a logged
// reference. http.ErrAbortHandler is re-raised: it is how a handler asks
// net/http to drop the connection.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.writeError(w, r, fmt.Errorf("panic: %v", v))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
