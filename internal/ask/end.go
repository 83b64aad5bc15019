package ask

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// Settle ends question id with o through the endings door, which Release
// closes (ErrShuttingDown from then on).
func (s *Service) Settle(ctx context.Context, id string, o pending.Outcome) (*pending.Question, error) {
	if !s.endings.Enter() {
		return nil, ErrShuttingDown
	}
	defer s.endings.Leave()
	return s.store.Settle(ctx, id, o)
}

// Reply ends the pending question q with the operator's answers, converted
// to the typed content its schema asks for; answers that do not fit leave
// it pending and fail with an elicit.AnswerError.
func (s *Service) Reply(ctx context.Context, q *pending.Question, answers [][]string) error {
	form, err := s.Form(q)
	if err != nil {
		return err
	}
	content, err := form.Convert(answers)
	if err != nil {
		return err
	}
	_, err = s.Settle(ctx, q.ID, pending.Outcome{
		Ending:  pending.EndReplied,
		Result:  pending.Result{Action: pending.ActionAccept, Content: content},
		Answers: answers,
		Filled:  form.Filled(answers, content),
	})
	return err
}

// Reject ends question id as the operator dismissed it: action is
// pending.ActionDecline ("no") or pending.ActionCancel ("not now").
func (s *Service) Reject(ctx context.Context, id, action string) error {
	_, err := s.Settle(ctx, id, pending.Outcome{Ending: pending.EndRejected, Result: pending.Result{Action: action}})
	return err
}

// RepeatEnding tells the listeners that repeat endings (EndingRepeater)
// again how q, which has ended, ended; a pending q is ignored. It is for a
// client that still shows q as pending: an operator's reply, reject or form
// request for a question that ended while questiond restarted, or before
// the client heard of it, gets a 404, and this closes the panel the
// OpenCode TUI keeps open for it. Nothing is changed or stored: it is the
// one place a read publishes, and it does so here, by name.
func (s *Service) RepeatEnding(q *pending.Question) {
	if q.Ended != nil {
		s.announce.repeatEnding(q)
	}
}

// Withdraw ends a question for an agent that can no longer wait for it, or
// withdraws it (pending.EndWithdrawn), as cancel. If it ended meanwhile,
// that ending stands and is returned.
func (s *Service) Withdraw(id string, ending pending.Ending) (*pending.Question, error) {
	ctx := context.WithoutCancel(context.Background())
	q, err := s.Settle(ctx, id, pending.Outcome{Ending: ending, Result: pending.Result{Action: pending.ActionCancel}})
	if err == nil {
		return q, nil
	}
	if q, gerr := s.store.Get(ctx, id); gerr == nil && q.Ended != nil {
		return q, nil
	}
	return nil, err
}

// Wait waits for question id to end, for ctx to end, or for Release, and
// returns the question as it ended or the reason it stopped waiting (check
// Released to tell a shutdown apart).
func (s *Service) Wait(ctx context.Context, id string) (*pending.Question, error) {
	ctx, cancel := s.UntilReleased(ctx)
	defer cancel()
	return s.store.Wait(ctx, id)
}

// Waited is how a wait for a question ended.
type Waited struct {
	Q   *pending.Question
	Err error
}

// WaitInBackground is Wait on a goroutine of its own, for a caller that
// keeps a connection alive meanwhile: the channel gets exactly one value.
func (s *Service) WaitInBackground(ctx context.Context, id string) <-chan Waited {
	done := make(chan Waited, 1)
	go func() {
		q, err := s.Wait(ctx, id)
		done <- Waited{q, err}
	}()
	return done
}

// Form returns the parsed elicitation of q, rebuilding it when the store
// does not keep it (a record loaded from disk or another replica).
func (s *Service) Form(q *pending.Question) (*elicit.Form, error) {
	if q.Form != nil {
		return q.Form, nil
	}
	form, err := elicit.NewForm(q.Message, q.Schema, s.opts.Elicit)
	if err != nil {
		s.log.Error("stored question no longer parses", zap.String("id", q.ID), zap.Error(err))
		return nil, fmt.Errorf("rebuilding question %s: %v", q.ID, err)
	}
	return form, nil
}
