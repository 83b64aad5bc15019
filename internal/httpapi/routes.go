package httpapi

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/questiond/questiond/internal/httpapi/console"
	"github.com/questiond/questiond/internal/httpapi/middleware"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/overlay"
	"github.com/questiond/questiond/internal/ui"
)

// routes wires every route. The host guard and CORS come first, so a
// preflight is answered before any credentials are asked for; streaming
// routes get no middleware that buffers or times out responses.
func (s *Server) routes(hosts func(http.Handler) http.Handler, cors *middleware.CORS) chi.Router {
	r := chi.NewRouter()
	r.Use(s.meterRequests, middleware.Recoverer(s.log), hosts, cors.Middleware, middleware.Except(isProbe, s.rateLimit()))
	r.NotFound(s.handleNotFound)
	page := ui.Handler(http.HandlerFunc(s.handleNotFound))
	r.MethodNotAllowed(s.handleMethodNotAllowed)

	// Operators: OpenCode's question API.
	r.Group(func(r chi.Router) {
		r.Use(s.guard.OperatorsOnly)
		if s.upstream != nil {
			s.overlayOperatorRoutes(r)
		} else {
			r.Get("/question", s.handleQuestionList)
			r.Post("/question/{requestID}/reply", s.handleQuestionReply)
			r.Post("/question/{requestID}/reject", s.handleQuestionReject)
		}
		r.Get("/event", s.handleEvent)
		r.Get("/events", s.handleEvent)
		r.Get("/global/event", s.handleGlobalEvent)
		// questiond's own: the operator's web page and what it needs beyond
		// OpenCode's shapes.
		r.Get("/questiond/question/{requestID}/form", s.handleQuestionForm)
		r.Get(ui.Prefix, page.ServeHTTP)
		r.Get(ui.Prefix+"/*", page.ServeHTTP)
		if s.upstream != nil {
			return // the server answers the rest: its web app at /, the TUI's routes
		}
		r.Get("/", handleRoot)

		// The operator console: what the OpenCode TUI needs to attach.
		r.Get("/config", s.console.Config)
		r.Get("/config/providers", s.console.ConfigProviders)
		r.Get("/provider", s.console.Providers)
		r.Get("/agent", s.console.Agents)
		r.Get("/session", s.console.SessionList)
		r.Post("/session", s.console.PromptRefused)
		r.Get("/session/status", s.console.SessionStatus)
		r.Get("/session/{sessionID}", s.console.SessionInfo)
		r.Get("/session/{sessionID}/message", s.console.SessionMessages)
		r.Post("/session/{sessionID}/message", s.console.PromptRefused)
	})
	// Anyone: probes (Docker, Kubernetes) carry no credentials. In front
	// of a server, these are the server's (the TUI checks its health when it
	// starts); probes use /readyz.
	if s.upstream == nil {
		r.Get(healthPath, s.handleHealth)
		r.Head(healthPath, s.handleHealth)
		r.With(s.guard.AnyRole).Get("/doc", s.handleDoc)
	}

	// Anyone: readiness probes carry no credentials.
	ready := s.ready.Handler(s.questions.Draining)
	r.Get(middleware.ReadyPath, ready)
	r.Head(middleware.ReadyPath, ready)

	// Agents: MCP elicitation.
	r.Group(func(r chi.Router) {
		r.Use(s.guard.AgentsOnly)
		r.Post("/elicitations", s.handleElicitationCreate)
		r.Get("/elicitations/{id}", s.handleElicitationGet)
		r.Delete("/elicitations/{id}", s.handleElicitationDelete)
		r.Post("/elicit", s.handleElicit)
	})
	// Agents, and operators, who may change any session's record.
	r.Group(func(r chi.Router) {
		r.Use(s.guard.AgentsOrOperators)
		r.Put("/sessions/{sessionID}", s.handleSessionPut)
		r.Get("/sessions/{sessionID}", s.handleSessionGet)
		r.Delete("/sessions/{sessionID}", s.handleSessionDelete)
	})
	// The OpenCode TUI's plain GET /mcp is an operator's (see
	// console.MCPStatusOr); every other request is an agent's, whose name
	// the MCP server gets as data.
	mcp := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mcp.Serve(w, r, middleware.CallerFrom(r.Context()).Agent)
	})
	if s.upstream != nil {
		// The server has a /mcp of its own (its MCP servers' status and
		// configuration): a request shaped as MCP is questiond's.
		r.Handle("/mcp", overlay.MCPOr(s.opts.MaxBodyBytes, s.guard.AgentsOnly(mcp), s.forward))
		r.NotFound(s.forward.ServeHTTP)
		r.MethodNotAllowed(s.forward.ServeHTTP)
		return r
	}
	r.Handle("/mcp", console.MCPStatusOr(s.guard.IsOperator, s.guard.AgentsOnly(mcp)))
	return r
}

func (s *Server) handleNotFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, wire.NewStatus(http.StatusNotFound, "NotFoundError", "No route for "+r.Method+" "+r.URL.Path))
}

func (s *Server) handleMethodNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if s.router.Match(chi.NewRouteContext(), m, r.URL.Path) {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		// chi sends methods it does not know here without matching the path.
		s.handleNotFound(w, r)
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	s.writeError(w, r, wire.NewStatus(http.StatusMethodNotAllowed, "MethodNotAllowed", "Method "+r.Method+" is not allowed on "+r.URL.Path))
}

// handleRoot sends a browser to the web page. The Location is relative, so
// it also holds behind a proxy that serves questiond under a path prefix.
func handleRoot(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Location", strings.TrimPrefix(ui.Prefix, "/"))
	w.WriteHeader(http.StatusFound)
}

const healthPath = "/global/health"

// handleHealth serves GET and HEAD /global/health to probes, which carry no
// credentials: where credentials are configured, such a caller learns only
// that questiond is up, {"healthy":true}. A caller who may use the routes of
// either role gets OpenCode's own body, version included. Credentials that
// admit nobody are refused as on /doc (401), so a client with a mistyped
// password finds out at its first request.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	c, err := s.auth.Identify(r)
	admitted := err == nil && s.auth.Admits(c)
	if !admitted && middleware.CredentialForm(r) != "none" {
		s.authLog.Failed(r, "either")
		middleware.OperatorChallenge(w)
		return
	}
	body := healthBody{Healthy: true}
	if admitted {
		body.Version = s.opts.Version
	}
	wire.WriteJSON(w, http.StatusOK, body)
}

// healthBody is OpenCode's health answer; Version is left out for callers
// who may not know it.
type healthBody struct {
	Healthy bool   `json:"healthy"`
	Version string `json:"version,omitempty"`
}

func (s *Server) handleDoc(w http.ResponseWriter, r *http.Request) {
	if len(s.opts.OpenAPI) == 0 {
		s.handleNotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.opts.OpenAPI)
}
