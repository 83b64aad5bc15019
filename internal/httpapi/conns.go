package httpapi

import (
	"errors"
	"net/http"

	"github.com/questiond/questiond/internal/connguard"
)

// admitConn tells the connection guard (package connguard) whom the
// request's connection now serves, so its connection counts for that caller
// rather than for its address. An agent that has as many connections as it
// may is refused with 503, and the connection closes; operators always get
// in. Without credentials configured, a caller counts by the routes it
// uses: operator routes as an operator, agent routes as an agent. It
// reports whether the request may go on.
func (s *Server) admitConn(w http.ResponseWriter, r *http.Request, c caller, operatorRoute bool) bool {
	who := connguard.Caller{Operator: c.role == roleOperator, Agent: c.agent}
	if c.role == roleAnonymous {
		who.Operator = operatorRoute
	}
	err := connguard.Admit(r.Context(), who)
	var capped *connguard.CapError
	if errors.As(err, &capped) {
		w.Header().Set("Connection", "close")
		writeStatus(w, &statusError{http.StatusServiceUnavailable, "ServiceUnavailable", capped.Message})
		return false
	}
	return true
}
