package middleware

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// Auth is who may use questiond. Operators answer questions with HTTP Basic
// credentials, as OpenCode clients send them (also as ?auth_token=, the
// base64 of "user:password", for EventSource clients that cannot set
// headers). Agents ask with a bearer token each. A role without configured
// credentials is open to any Caller on the allowed network, except callers
// that present the other role's credentials: an agent never answers, an
// operator never asks.
type Auth struct {
	OperatorUsername string            // default "opencode", as OpenCode
	OperatorPassword string            // "" leaves operator routes without credentials
	AgentTokens      map[string]string // agent name → token; empty leaves agent routes open
	// UpstreamUsername and UpstreamPassword are the credentials of the
	// OpenCode server questiond is in front of (--upstream): they admit
	// operators too, so that an OpenCode client logs in once, with the
	// server's own. Ignored without OperatorPassword (questiond's
	// configuration sets that to the server's when it has none of its own).
	UpstreamUsername, UpstreamPassword string
}

// MinAgentTokenLength is the shortest agent token accepted: shorter ones are
// guessable.
const MinAgentTokenLength = 16

// Roles of a Caller.
type Role int

const (
	RoleAnonymous Role = iota
	RoleOperator
	RoleAgent
)

// Caller is who sent a request, as far as its credentials say.
type Caller struct {
	Role  Role
	Agent string // the agent's name, for RoleAgent
}

type callerKey struct{}

// CallerFrom returns the Caller the auth middleware identified.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// Authenticator checks credentials. Secrets are kept as SHA-256 digests,
// so neither their content nor their length shows in response times: the
// operator's are compared in constant time, and an agent's token is found
// by its digest in a map, whose lookup time depends on the digest of what
// was sent and tells nothing about any token (finding a token from its
// digest is a SHA-256 preimage). Comparing with every token in turn cost
// 6–9 % of the server's CPU with 512 agents, twice per request.
type Authenticator struct {
	operator  bool
	operators []login             // every pair is compared, so timing tells which matched none
	agents    map[[32]byte]string // token digest → agent name
}

// login is an operator's user name and password, as SHA-256 digests.
type login struct{ user, pass [32]byte }

func newLogin(user, pass string) login {
	if user == "" {
		user = "opencode"
	}
	return login{sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))}
}

func NewAuthenticator(a Auth) (*Authenticator, error) {
	au := &Authenticator{agents: make(map[[32]byte]string, len(a.AgentTokens))}
	if a.OperatorPassword != "" {
		au.operator = true
		au.operators = append(au.operators, newLogin(a.OperatorUsername, a.OperatorPassword))
		if a.UpstreamPassword != "" {
			au.operators = append(au.operators, newLogin(a.UpstreamUsername, a.UpstreamPassword))
		}
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

// Identify reads a request's credentials. No credentials is an anonymous
// Caller; credentials of a role that has none configured are ignored, as
// OpenCode ignores them when it has no password.
func (a *Authenticator) Identify(r *http.Request) (Caller, error) {
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
			return Caller{}, errBadCredentials
		}
	}
	if token := r.URL.Query().Get("auth_token"); token != "" {
		return a.basic(token)
	}
	return Caller{}, nil
}

func (a *Authenticator) basic(encoded string) (Caller, error) {
	if !a.operator {
		return Caller{}, nil
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return Caller{}, errBadCredentials
	}
	user, pass, ok := strings.Cut(string(raw), ":")
	uh, ph := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(pass))
	match := 0
	for _, l := range a.operators {
		match |= subtle.ConstantTimeCompare(uh[:], l.user[:]) & subtle.ConstantTimeCompare(ph[:], l.pass[:])
	}
	if !ok || match != 1 {
		return Caller{}, errBadCredentials
	}
	return Caller{Role: RoleOperator}, nil
}

func (a *Authenticator) bearer(token string) (Caller, error) {
	if len(a.agents) == 0 {
		return Caller{}, nil
	}
	found, ok := a.agents[sha256.Sum256([]byte(token))]
	if !ok {
		return Caller{}, errBadCredentials
	}
	return Caller{Role: RoleAgent, Agent: found}, nil
}

// OperatorChallenge is OpenCode's 401: an empty body and a Basic challenge.
func OperatorChallenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Basic realm="Secure Area"`)
	w.WriteHeader(http.StatusUnauthorized)
}

func agentChallenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="questiond"`)
	wire.WriteStatus(w, wire.NewStatus(http.StatusUnauthorized, "Unauthorized",
		"Agent routes need Authorization: Bearer <token>; the token is not valid or missing."))
}

func forbidden(w http.ResponseWriter, message string) {
	wire.WriteStatus(w, wire.NewStatus(http.StatusForbidden, "Forbidden", message))
}

// Guard admits each role's callers to its routes, challenges those without
// valid credentials (each failure counted by its AuthFailures) and puts
// the caller it identified in the request's context (CallerFrom).
type Guard struct {
	auth     *Authenticator
	failures *AuthFailures
}

// NewGuard guards routes with auth, logging failures to failures.
func NewGuard(auth *Authenticator, failures *AuthFailures) *Guard {
	return &Guard{auth: auth, failures: failures}
}

// OperatorsOnly guards the routes operators use: listing, answering and
// watching questions.
func (g *Guard) OperatorsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := g.auth.Identify(r)
		switch {
		case err != nil, c.Role == RoleAnonymous && g.auth.operator:
			g.failures.Failed(r, "operator")
			OperatorChallenge(w)
		case c.Role == RoleAgent:
			forbidden(w, "Agent credentials cannot list, answer or watch questions; only an operator can.")
		case admitConn(w, r, c, true):
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
		}
	})
}

// AgentsOnly guards the routes agents use: asking, waiting and withdrawing.
func (g *Guard) AgentsOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := g.auth.Identify(r)
		switch {
		case err != nil, c.Role == RoleAnonymous && len(g.auth.agents) > 0:
			g.failures.Failed(r, "agent")
			agentChallenge(w)
		case c.Role == RoleOperator:
			forbidden(w, "Operator credentials cannot ask questions; only an agent can.")
		case admitConn(w, r, c, false):
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
		}
	})
}

// AnyRole guards the API document, which both roles use: any valid
// credentials do, none do only when no role has credentials configured.
func (g *Guard) AnyRole(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := g.auth.Identify(r)
		if err != nil || !g.auth.Admits(c) {
			g.failures.Failed(r, "either")
			OperatorChallenge(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Admits reports whether c may use the routes either role may: with
// credentials of either role, or with none when no role has any configured.
func (a *Authenticator) Admits(c Caller) bool {
	return c.Role != RoleAnonymous || (!a.operator && len(a.agents) == 0)
}

// AgentsOrOperators guards the session routes: agents as AgentsOnly does,
// and operators, who may read, change and remove any session's record
// (they ask nothing: only agents ask, through the service).
func (g *Guard) AgentsOrOperators(next http.Handler) http.Handler {
	agents := g.AgentsOnly(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, err := g.auth.Identify(r); err == nil && c.Role == RoleOperator {
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, c)))
			return
		}
		agents.ServeHTTP(w, r)
	})
}

// IsOperator reports whether OperatorsOnly would let r through (without
// counting its connection).
func (g *Guard) IsOperator(r *http.Request) bool {
	c, err := g.auth.Identify(r)
	return err == nil && c.Role != RoleAgent && (c.Role == RoleOperator || !g.auth.operator)
}
