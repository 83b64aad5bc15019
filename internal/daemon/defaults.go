package daemon

import (
	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/notify"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/pgstore"
	"github.com/questiond/questiond/internal/session"
	"github.com/questiond/questiond/internal/sse"
)

// The defaults of every setting a daemon's user (cmd/questiond's flags)
// fills in Config, so that it reaches them through this package alone.
// Each is the constant of the part that applies it, where it is explained;
// only DefaultShutdownTimeout is the daemon's own.

// DefaultShutdownTimeout bounds a whole graceful shutdown (Shutdown's
// context, --shutdown-timeout). The shutdown Serve runs when serving fails
// gets the same bound, so the two are one number.
const DefaultShutdownTimeout = DefaultFailureTimeout

// Questions' lifetimes and waits (httpapi; the reconnect grace is ask's).
const (
	DefaultTimeout        = httpapi.DefaultTimeout
	DefaultMaxTimeout     = httpapi.DefaultMaxTimeout
	DefaultMaxWait        = httpapi.DefaultMaxWait
	DefaultKeepAlive      = httpapi.DefaultKeepAlive
	DefaultReconnectGrace = ask.DefaultReconnectGrace
	DefaultMaxBodyBytes   = httpapi.DefaultMaxBodyBytes
	DefaultMCPIdle        = httpapi.DefaultMCPIdle
)

// The API's limits (httpapi.Limits; those on pending questions are ask's).
const (
	DefaultMaxPending             = ask.DefaultMaxPending
	DefaultMaxPendingPerAgent     = ask.DefaultMaxPendingPerAgent
	DefaultMaxStreams             = httpapi.DefaultMaxStreams
	DefaultMaxMCPStreams          = httpapi.DefaultMaxMCPStreams
	DefaultMaxMCPStreamsPerAgent  = httpapi.DefaultMaxMCPStreamsPerAgent
	DefaultMaxMCPSessions         = httpapi.DefaultMaxMCPSessions
	DefaultMaxMCPSessionsPerAgent = httpapi.DefaultMaxMCPSessionsPerAgent
	DefaultRequestsPerMinute      = httpapi.DefaultRequestsPerMinute
)

// Ended questions' retention and the byte budgets (pending.Options).
const (
	DefaultRetention           = pending.DefaultRetention
	DefaultMaxRetained         = pending.DefaultMaxRetained
	DefaultMaxRetainedPerAgent = pending.DefaultMaxRetainedPerAgent
	DefaultKeyRetention        = pending.DefaultKeyRetention
	DefaultMaxBytes            = pending.DefaultMaxBytes
	DefaultMaxBytesPerAgent    = pending.DefaultMaxBytesPerAgent
)

// What one elicitation may hold (elicit.Options).
const (
	DefaultMaxProperties = elicit.DefaultMaxProperties
	DefaultMaxOptions    = elicit.DefaultMaxOptions
	DefaultHeaderLimit   = elicit.DefaultHeaderLimit
)

// Event streams (sse.Options).
const (
	DefaultHeartbeat         = sse.DefaultHeartbeat
	DefaultEventWriteTimeout = sse.DefaultWriteTimeout
	DefaultEventQueueLength  = sse.DefaultQueueLength
	DefaultEventQueueBytes   = sse.DefaultQueueBytes
	DefaultMaxEventScopes    = sse.DefaultMaxScopes
)

// Connections (connguard.Options).
const (
	DefaultBodyReadTimeout  = connguard.DefaultBodyReadTimeout
	DefaultMaxConns         = connguard.DefaultMaxConns
	DefaultMaxConnsPerAddr  = connguard.DefaultMaxConnsPerAddr
	DefaultMaxConnsPerAgent = connguard.DefaultMaxConnsPerAgent
	DefaultOperatorReserve  = connguard.DefaultOperatorReserve
)

// Session records (session.Options).
const (
	DefaultCapability          = session.DefaultCapability
	DefaultMaxSessions         = session.DefaultMaxSessions
	DefaultMaxSessionsPerAgent = session.DefaultMaxSessionsPerAgent
)

// Webhooks (notify.Options; the lease is pgstore.Options.OutboxLease).
const (
	DefaultNotifyMaxAge      = notify.DefaultMaxAge
	DefaultNotifyQueueLength = notify.DefaultQueueLength
	DefaultNotifyMinBackoff  = notify.DefaultMinBackoff
	DefaultNotifyMaxBackoff  = notify.DefaultMaxBackoff
	DefaultOutboxLease       = pgstore.DefaultOutboxLease
)
