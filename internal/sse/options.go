package sse

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/defaults"
)

// Defaults for Options.
const (
	DefaultHeartbeat    = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultCloseGrace   = time.Second
	DefaultQueueLength  = 1024
	DefaultQueueBytes   = 64 << 20
	DefaultMaxScopes    = 1024
	DefaultProject      = "global"
)

// Options configure a Broker. Zero values mean the defaults.
type Options struct {
	Heartbeat    time.Duration // server.heartbeat period on every stream
	WriteTimeout time.Duration // a frame not written within it cuts that subscriber off
	// CloseGrace bounds how long each stream may take, once Close is called,
	// to write what was queued for it (never more than WriteTimeout): one
	// client that stopped reading cannot hold Close up for longer.
	CloseGrace  time.Duration
	QueueLength int // frames held per subscriber before it is cut off
	// QueueBytes bounds the bytes of the frames held per subscriber: frames
	// carry agents' text (a question's message may be a megabyte), so a
	// client that stops reading must not pin QueueLength of them. A frame
	// larger than it still goes to a subscriber with nothing queued.
	QueueBytes int
	MaxScopes  int         // directories with a connected /event subscriber at once; more are refused (ErrTooManyScopes)
	Project    string      // "project" of /global/event frames
	Logger     *zap.Logger // nil means zap.NewNop()
}

// withDefaults fills zero values and rejects negative ones.
func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Heartbeat < 0:
		return o, fmt.Errorf("sse options: negative heartbeat %v", o.Heartbeat)
	case o.WriteTimeout < 0:
		return o, fmt.Errorf("sse options: negative write timeout %v", o.WriteTimeout)
	case o.CloseGrace < 0:
		return o, fmt.Errorf("sse options: negative close grace %v", o.CloseGrace)
	case o.QueueLength < 0:
		return o, fmt.Errorf("sse options: negative queue length %d", o.QueueLength)
	case o.QueueBytes < 0:
		return o, fmt.Errorf("sse options: negative queue size %d", o.QueueBytes)
	case o.MaxScopes < 0:
		return o, fmt.Errorf("sse options: negative scope limit %d", o.MaxScopes)
	}
	defaults.Fill(&o.Heartbeat, DefaultHeartbeat)
	defaults.Fill(&o.WriteTimeout, DefaultWriteTimeout)
	defaults.Fill(&o.CloseGrace, DefaultCloseGrace)
	o.CloseGrace = min(o.CloseGrace, o.WriteTimeout)
	defaults.Fill(&o.QueueLength, DefaultQueueLength)
	defaults.Fill(&o.QueueBytes, DefaultQueueBytes)
	defaults.Fill(&o.MaxScopes, DefaultMaxScopes)
	if o.Project == "" {
		o.Project = DefaultProject
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return o, nil
}
