package sse

import (
	"errors"
	"time"

	"go.uber.org/zap"
)

// beat queues one server.heartbeat for every subscriber per tick, until
// Close. A subscriber with frames still queued skips that beat: they show
// the client the connection is alive, and a beat must never cut anyone off.
func (b *Broker) beat(ticker *time.Ticker) {
	defer close(b.heartbeatDone)
	defer ticker.Stop()
	for {
		select {
		case <-b.stopHeartbeat:
			return
		case <-ticker.C:
			f, err := b.framesOf(Message{Event: brokerEvent(typeHeartbeat)})
			if err == nil {
				err = b.deliver("", Everyone, f, true)
			}
			if err != nil && !errors.Is(err, ErrClosed) {
				b.log.Error("heartbeat not sent", zap.Error(err))
			}
		}
	}
}
