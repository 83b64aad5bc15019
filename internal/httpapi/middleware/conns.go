package middleware

import (
	"errors"
	"net/http"

	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/httpapi/wire"
)

// admitConn tells the connection guard (package connguard) whom the
// request's connection now serves, so its connection counts for that caller
// rather than for its address. An agent that has as many connections as it
// may is refused with 503, and the connection closes; operators always get
// in. Without credentials configured, a caller counts by the routes it
// uses: operator routes as an operator, agent routes as an agent. It
// reports whether the request may go on.
func admitConn(w http.ResponseWriter, r *http.Request, c Caller, operatorRoute bool) bool {
	who := connguard.Caller{Operator: c.Role == RoleOperator, Agent: c.Agent}
	if c.Role == RoleAnonymous {
		who.Operator = operatorRoute
	}
	err := connguard.Admit(r.Context(), who)
	var capped *connguard.CapError
	if errors.As(err, &capped) {
		w.Header().Set("Connection", "close")
		wire.WriteStatus(w, wire.NewStatus(http.StatusServiceUnavailable, "ServiceUnavailable", capped.Message))
		return false
	}
	return true
}
