// Package overlay puts questiond in front of a real OpenCode server
// (`questiond --upstream`): it forwards the requests questiond does not
// answer itself to that server as they are, streaming and with the
// server's own credentials, so that one OpenCode client sees the server's
// sessions and questions and questiond's questions together.
//
// It knows nothing of questions: package httpapi decides which routes are
// questiond's and merges the two servers' lists and event streams, using
// Upstream to reach the server and frames.go to read its streams whole
// frame by whole frame.
package overlay
