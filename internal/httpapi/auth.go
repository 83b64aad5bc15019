package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Auth is who may use questiond. Operators answer questions with HTTP Basic
// credentials, as OpenCode clients send them (also as ?auth_token=, the
// base64 of "user:password", for EventSource clients that cannot set
// headers). Agents ask with a bearer token each. A role without configured
// credentials is open to any caller on the allowed network, except callers
// that present the other role's credentials: an agent never answers, an
// operator never asks.
type Auth struct {
	OperatorUsername string            // default "opencode", as OpenCode
	OperatorPassword string            // "" leaves operator routes without credentials
	AgentTokens      map[string]string // agent name → token; empty leaves agent routes open
}

// MinAgentTokenLength is the shortest agent token accepted: shorter ones are
// guessable.
const MinAgentTokenLength = 16

// Roles of a caller.
type role int

const (
	roleAnonymous role = iota
	roleOperator
	roleAgent
)

// caller is who sent a request, as far as its credentials say.
type caller struct {
	role  role
	agent string // the agent's name, for roleAgent
}

type callerKey struct{}

// callerFrom returns the caller the auth middleware identified.
func callerFrom(ctx context.Context) caller {
	c, _ := ctx.Value(callerKey{}).(caller)
	return c
}

// authenticator checks credentials. Secrets are kept as SHA-256 digests,
// so neither their content nor their length shows in response times: the
// operator's are compared in constant time, and an agent's token is found
// by its digest in a map, whose lookup time depends on the digest of what
// was sent and tells nothing about any token (finding a token from its
// digest is a SHA-256 preimage). Comparing with every token in turn cost
// 6–9 % of the server's CPU with 512 agents, twice per request.
type authenticator struct {
	operator     bool
	operatorUser [32]byte
	operatorPass [32]byte
	agents       map[[32]byte]string // token digest → agent name
}

func newAuthenticator(a Auth) (*authenticator, error) {
	au := &authenticator{agents: make(map[[32]byte]string, len(a.AgentTokens))}
	if a.OperatorPassword != "" {
		user := a.OperatorUsername
		if user == "" {
			user = "opencode"
		}
		au.operator = true
		au.operatorUser = sha256.Sum256([]byte(user))
		au.operatorPass = sha256.Sum256([]byte(a.OperatorPassword))
	}
	for name, token := range a.AgentTokens {
		switch {
		case name == "" || strings.ContainsAny(name, " \t\r\n=,"):
			return nil, fmt.Errorf("agent name %q: use letters, digits, '-', '_' or '.'", name)
		case len(token) < MinAgentTokenLength:
			return nil, fmt.Errorf("agent %q: its token is shorter than %d characters", name, MinAgentTokenLength)
		}
		h := sha256.Sum256([]byte(token))
		if other, dup := au.agents[h]; dup {
			return nil, fmt.Errorf("agents %q and %q share a token: give each agent its own", other, name)
		}
		au.agents[h] = name
	}
	return au, nil
}

// errBadCredentials: the request carries credentials that match nobody.
var errBadCredentials = errors.New("bad credentials")

// identify reads a request's credentials. No credentials is an anonymous
// caller; credentials of a role that has none configured are ignored, as
// OpenCode ignores them when it has no password.
func (a *authenticator) identify(r *http.Request) (caller, error) {
	header := r.Header.Get("Authorization")
	scheme, value, _ := strings.Cut(header, " ")
	value = strings.TrimSpace(value)
	switch {
	case strings.EqualFold(scheme, "Basic") && header != "":
		return a.basic(value)
	case strings.EqualFold(scheme, "Bearer") && header != "":
		return a.bearer(value)
	case header != "":
		if a.operator || len(a.agents) > 0 {
			return caller{}, errBadCredentials
		}
	}
	if token := r.URL.Query().Get("auth_token"); token != "" {
		return a.basic(token)
	}
	return caller{}, nil
}

func (a *authenticator) basic(encoded string) (caller, error) {
	if !a.operator {
		return caller{}, nil
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return caller{}, errBadCredentials
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	uh, ph := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
	match := subtle.ConstantTimeCompare(uh[:], a.operatorUser[:]) & subtle.ConstantTimeCompare(ph[:], a.operatorPass[:])
	if !ok || match != 1 {
		return caller{}, errBadCredentials
	}
	return caller{role: roleOperator}, nil
}

func (a *authenticator) bearer(token string) (caller, error) {
	if len(a.agents) == 0 {
		return caller{}, nil
	}
	found, ok := a.agents[sha256.Sum256([]byte(token))]
	if !ok {
		return caller{}, errBadCredentials
	}
	return caller{role: roleAgent, agent: found}, nil
}

// operatorChallenge is OpenCode's 401: an empty body and a Basic challenge.
func operatorChallenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="Secure Area"`)
	w.WriteHeader(http.StatusUnauthorized)
}

func (s *Server) agentChallenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="questiond"`)
	writeStatus(w, &statusError{http.StatusUnauthorized, "Unauthorized",
		"Agent routes need Authorization: Bearer <token>; the token is not valid or missing."})
}

func forbidden(w http.ResponseWriter, message string) {
	writeStatus(w, &statusError{http.StatusForbidden, "Forbidden", message})
}

// operatorsOnly guards the routes operators use: listing, answering and
// watching questions.
func (s *Server) operatorsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.auth.identify(r)
		switch {
		case err != nil, c.role == roleAnonymous && s.auth.operator:
			s.authLog.failed(r, "operator")
			operatorChallenge(w)
		case c.role == roleAgent:
			forbidden(w, "Agent credentials cannot list, answer or watch questions; only an operator can.")
		case s.admitConn(w, r, c, true):
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
		}
	})
}

// agentsOnly guards the routes agents use: asking, waiting and withdrawing.
func (s *Server) agentsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.auth.identify(r)
		switch {
		case err != nil, c.role == roleAnonymous && len(s.auth.agents) > 0:
			s.authLog.failed(r, "agent")
			s.agentChallenge(w)
		case c.role == roleOperator:
			forbidden(w, "Operator credentials cannot ask questions; only an agent can.")
		case s.admitConn(w, r, c, false):
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
		}
	})
}

// anyRole guards the API document, which both roles use: any valid
// credentials do, none do only when no role has credentials configured.
func (s *Server) anyRole(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := s.auth.identify(r)
		if err != nil || !s.auth.admits(c) {
			s.authLog.failed(r, "either")
			operatorChallenge(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// admits reports whether c may use the routes either role may: with
// credentials of either role, or with none when no role has any configured.
func (a *authenticator) admits(c caller) bool {
	return c.role != roleAnonymous || (!a.operator && len(a.agents) == 0)
}

// ownedBy reports whether the calling agent may see q: its own questions
// only, when agents have tokens; anyone's when they do not.
func ownedBy(r *http.Request, owner string) bool {
	c := callerFrom(r.Context())
	return c.role != roleAgent || c.agent == owner
}
