// Package middleware is the HTTP middleware that refuses a request before
// any route handles it, in go-chi's shape (each a func(http.Handler)
// http.Handler or a small constructor of one): the host guard (421), CORS
// (403 for foreign writes), the guards of each role's routes with the
// caller they put in the request's context (401, 403, and the connection
// guard's 503), the rate limit (429), panic recovery (500), readiness
// probes, and the count of every request for metrics. Refusals are written
// with package wire, as every other answer.
//
// Locks: AuthFailures holds its own mutex only; nothing here holds two.
package middleware
