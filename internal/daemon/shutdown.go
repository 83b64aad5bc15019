package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/pending"
)

// Shutdown stops the daemon gracefully, in this order:
//
//  1. It stops accepting: new elicitations, event streams and MCP requests
//     are refused with 503 ("questiond is shutting down"), the listener is
//     closed, and connections that are not being answered (silent, idle, or
//     still sending a request body) are closed at once.
//  2. It waits for elicitations that got in before that to be stored and
//     announced, so none is stored after the next step.
//  3. It releases waiting agents. The memory store cannot keep questions:
//     every pending one ends as cancel (ending "shutdown"), so agents get
//     their answer. A durable store keeps them for the next start: a waiting
//     long-poll answers with the question as it is (pending), a waiting
//     POST /elicit answers 503 naming the question. Either way, MCP tool
//     calls withdraw their questions (nobody could collect those answers),
//     and Shutdown waits until they have.
//  4. Every ending made by then, including operators' replies and timeouts
//     already under way, has been published (question.replied or
//     question.rejected); endings asked for from now on are refused with
//     503, and deadlines end nothing any more (an ending now could not be
//     announced: a durable store's question whose deadline passes meanwhile
//     stays pending, and the next start ends it as timed out). A replica on
//     PostgreSQL stops following the other replicas' changes here too, once
//     its change-log tail has announced this replica's own (a timeout made
//     just before), within pgstore.OwnChangeWait.
//  5. It closes the notifier, which takes no notification after the last
//     ending: queued ones get their own short grace (notify.Options.Grace)
//     to be delivered, then attempts still in flight are stopped and what is
//     left is written to the outbox in the bbolt file (without one, it is
//     lost, and logged). Meanwhile it closes the event broker: each stream
//     gets every event published before, then ends. The broker gets its own short deadline,
//     Config.StreamGrace or what is left of ctx if less, so a client that
//     stopped reading cannot eat the time of the rest; such a stream is cut
//     off, which is logged as a warning and is not an error.
//  6. It waits for the HTTP server: requests in flight finish and their
//     answers are written. Then it stops serving metrics (a scrape in flight
//     finishes first), closes the store (stopping its timers), then the
//     bbolt file it opened, if any.
//
// Shutdown does not end the pending questions of a durable store, and does
// not close a Journal the caller owns.
//
// If ctx ends first, the remaining waits give up at once: connections still
// open are closed, the store and the file are closed anyway, and Shutdown
// returns ctx's error, wrapped with the step it interrupted. Only the first
// call runs the sequence; later calls wait for it and return its result.
func (d *Daemon) Shutdown(ctx context.Context) error {
	d.stopOnce.Do(func() { d.stopErr = d.shutdown(ctx) })
	return d.stopErr
}

func (d *Daemon) shutdown(ctx context.Context) error {
	fields := []zap.Field{zap.Bool("durable", d.durable)}
	if deadline, ok := ctx.Deadline(); ok {
		fields = append(fields, zap.Duration("timeout", time.Until(deadline).Round(time.Millisecond)))
	}
	d.log.Info("shutting down", fields...)
	var errs []error

	// 1. Stop accepting.
	d.questions.Drain()
	d.mu.Lock()
	d.stopping = true
	serving := d.serving
	stopWatch := d.stopWatch
	d.mu.Unlock()
	if stopWatch != nil {
		stopWatch() // the OpenCode server's tool calls: no new question will be placed by them
		<-d.watched
	}
	if !serving {
		_ = d.ln.Close() // Serve never took it
		if d.metricsLn != nil {
			_ = d.metricsLn.Close()
		}
	}
	d.conns.CloseAll() // silent, idle and half-sent ones: nobody waits for their answers
	httpDone := make(chan error, 1)
	go func() { httpDone <- d.http.Shutdown(ctx) }()

	// 2. Wait for creates already past the door.
	if err := d.questions.WaitForCreates(ctx); err != nil {
		errs = append(errs, err)
	}

	// 3 and 4. Release waiting agents; every ending is published.
	if !d.durable {
		ended, err := d.store.SettleAll(ctx, pending.Outcome{
			Ending: pending.EndShutdown,
			Result: pending.Result{Action: pending.ActionCancel},
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("ending pending questions: %w", err))
		} else if len(ended) > 0 {
			d.log.Info("ended pending questions as cancel", zap.Int("count", len(ended)))
		}
	}
	if err := d.questions.Release(ctx); err != nil {
		errs = append(errs, fmt.Errorf("releasing waiting agents: %w", err))
	}
	if err := d.store.StopTimeouts(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping question deadlines: %w", err))
	}
	// Other replicas' changes are announced no more: streams close next,
	// once this replica's own (a timeout just made) are out.
	d.announceOwn(ctx)
	d.stopFollowing()

	// 5. Close the notifier and the event streams, each on a deadline of
	// its own.
	notified := make(chan error, 1)
	go func() { notified <- d.notify.Close(ctx) }()
	grace, cancel := context.WithTimeout(ctx, d.streamGrace)
	err := d.bus.Close(grace)
	cancel()
	switch {
	case err == nil:
	case ctx.Err() == nil:
		d.log.Warn("event streams cut off: their clients did not read the last events in time",
			zap.Duration("grace", d.streamGrace), zap.Error(err))
	default:
		errs = append(errs, fmt.Errorf("closing event streams: %w", err))
	}

	// 6. Stop the HTTP server, then the store, then the file.
	if err := <-httpDone; err != nil {
		errs = append(errs, fmt.Errorf("stopping the HTTP server: %w", err))
		_ = d.http.Close()
	}
	if err := d.stopMetrics(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the metrics server: %w", err))
	}
	if err := <-notified; err != nil {
		errs = append(errs, fmt.Errorf("stopping notifications: %w", err))
	}
	if err := d.store.Close(ctx); err != nil {
		errs = append(errs, fmt.Errorf("closing the question store: %w", err))
	}
	if d.journal != nil {
		if err := d.journal.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the question database: %w", err))
		}
	}
	d.closePostgres()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	d.log.Info("stopped")
	return nil
}
