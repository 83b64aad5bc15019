package daemon_test

import (
	"context"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/questiond/questiond/internal/daemon"
)

// A start tells its story in order: the file is opened, then what it held
// is restored. The second start restores from the file the first left.
func TestStartLogsStoreOpenedBeforeRestored(t *testing.T) {
	t.Parallel()
	cfg := config(t)
	for start := 1; start <= 2; start++ {
		core, logs := observer.New(zapcore.InfoLevel)
		cfg.Logger = zap.New(core)
		d, err := daemon.New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, e := range logs.All() {
			switch e.Message {
			case "question store opened":
				if e.ContextMap()["path"] != cfg.BoltPath {
					t.Errorf("start %d: %q names %v, want %s", start, e.Message, e.ContextMap()["path"], cfg.BoltPath)
				}
				order = append(order, e.Message)
			case "questions restored":
				order = append(order, e.Message)
			}
		}
		if len(order) != 2 || order[0] != "question store opened" || order[1] != "questions restored" {
			t.Errorf("start %d logged %q, want the store opened, then the questions restored", start, order)
		}
	}
}
