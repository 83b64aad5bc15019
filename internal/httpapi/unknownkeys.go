package httpapi

import (
	"sync"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/httpapi/wire"
)

// maxUnknownKeys bounds the key names remembered as logged: a client that
// sends a fresh key with every request costs no memory and fills no log.
const maxUnknownKeys = 100

// maxLoggedKeyLength bounds a key name in the log; a body may hold a key of
// a megabyte.
const maxLoggedKeyLength = 64

// unknownKeys logs, at info and once per name, the keys of an elicitation
// request that questiond does not know and lets through (MCP adds params
// over time; near misses of questiond's own fields are refused instead).
// An agent whose "timeoutSeconds" does nothing finds it named in the log.
type unknownKeys struct {
	log  *zap.Logger
	mu   sync.Mutex
	seen map[string]bool
	full bool // the cap was reached, and said so
}

func newUnknownKeys(log *zap.Logger) *unknownKeys {
	return &unknownKeys{log: log, seen: map[string]bool{}}
}

// note logs each of keys not logged before, as sent to route by agent
// ("" without agent tokens).
func (u *unknownKeys) note(keys []string, route, agent string) {
	for _, key := range keys {
		key = wire.Truncate(key, maxLoggedKeyLength)
		u.mu.Lock()
		first, full := false, false
		switch {
		case u.seen[key]:
		case len(u.seen) >= maxUnknownKeys:
			full, u.full = !u.full, true
		default:
			u.seen[key], first = true, true
		}
		u.mu.Unlock()
		if full {
			u.log.Info("unknown request keys: no further names are logged", zap.Int("logged", maxUnknownKeys))
		}
		if !first {
			continue
		}
		fields := []zap.Field{zap.String("key", key), zap.String("route", route)}
		if agent != "" {
			fields = append(fields, zap.String("agent", agent))
		}
		u.log.Info("unknown request key ignored (logged once per name)", fields...)
	}
}
