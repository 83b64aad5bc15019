package sse

import (
	"errors"
	"time"

	"go.uber.org/zap"
)

// beat publishes one server.heartbeat on every stream per tick, until Close.
// A stream too busy to take it skips that beat: real traffic already shows
// clients the connection is alive.
func (b *Broker) beat(ticker *time.Ticker) {
	defer close(b.heartbeatDone)
	defer ticker.Stop()
	for {
		select {
		case <-b.stopHeartbeat:
			return
		case <-ticker.C:
			err := b.publish(Message{Event: brokerEvent(typeHeartbeat)}, true)
			if err != nil && !errors.Is(err, ErrClosed) {
				b.log.Error("heartbeat not sent", zap.Error(err))
			}
		}
	}
}
