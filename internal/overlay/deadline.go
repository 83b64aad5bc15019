package overlay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// forwardAnswerTimeout bounds how long a GET or HEAD to the server, one
// questiond forwards or its own, waits for the answer to begin (its status
// line and header). An OpenCode
// server that is still starting was seen to take connections and answer
// nothing, for good; a client's request would wait on it for ever, where
// a 502 has it try again. Other methods are not bounded: a prompt call is
// answered when the model's turn ends, however long that is.
var forwardAnswerTimeout = 30 * time.Second

// errNoAnswer is why a forwarded request was cancelled after
// forwardAnswerTimeout.
var errNoAnswer = errors.New("no answer began")

// answerDeadline is the transport to the server: next, with reads bounded
// by forwardAnswerTimeout until their answer begins (event streams have
// their own, shorter bound: see Stream).
type answerDeadline struct{ next http.RoundTripper }

func (a answerDeadline) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return a.next.RoundTrip(r)
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	timer := time.AfterFunc(forwardAnswerTimeout, func() { cancel(errNoAnswer) })
	res, err := a.next.RoundTrip(r.WithContext(ctx))
	timer.Stop()
	if err != nil {
		defer cancel(nil)
		if errors.Is(context.Cause(ctx), errNoAnswer) {
			return nil, fmt.Errorf("%w within %v", errNoAnswer, forwardAnswerTimeout)
		}
		return nil, err
	}
	res.Body = cancelWithBody{ReadCloser: res.Body, cancel: func() { cancel(nil) }}
	return res, nil
}

// cancelWithBody releases a request's context when its answer's body is
// closed.
type cancelWithBody struct {
	io.ReadCloser
	cancel func()
}

func (c cancelWithBody) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
