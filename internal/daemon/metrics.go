package daemon

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/connguard"
	"github.com/questiond/questiond/internal/httpapi"
	"github.com/questiond/questiond/internal/metrics"
)

// metricsPath is the one route of the metrics listener.
const metricsPath = "/metrics"

// openMetricsServer builds the server of Config.Metrics: GET /metrics only,
// behind the same host guard as the API (a DNS-rebinding page must not read
// it from a browser on this machine).
func (d *Daemon) openMetricsServer(cfg Config) {
	mux := http.NewServeMux()
	mux.Handle("GET "+metricsPath, d.metrics.Handler())
	guard := httpapi.GuardHosts(cfg.Metrics.Addr().String(), cfg.API.AllowedHosts)
	d.metricsHTTP = &http.Server{
		Handler:           guard(mux),
		ReadHeaderTimeout: 10 * time.Second,
		WriteTimeout:      30 * time.Second, // a scrape is one short answer
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          zap.NewStdLog(d.log.Named("metrics")),
	}
	d.metricsLn = cfg.Metrics
}

// observe lets the metrics read the parts once they exist.
func (d *Daemon) observe() {
	if d.metrics == nil {
		return
	}
	d.metrics.Observe(metrics.Sources{Pending: d.store.Count, Events: d.bus.Stats, MCPSessions: d.api.MCPSessions,
		Conns: d.connStats})
}

// connStats reads the connection guard's counts. observe runs before the
// guard is built; scrapes start after.
func (d *Daemon) connStats() connguard.Stats {
	if d.conns == nil {
		return connguard.Stats{}
	}
	return d.conns.Stats()
}

// serveMetrics serves the metrics listener until Shutdown; failing to serve
// it is logged, and questiond goes on without metrics.
func (d *Daemon) serveMetrics() {
	if d.metricsHTTP == nil {
		return
	}
	go func() {
		if err := d.metricsHTTP.Serve(d.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error("serving metrics failed; questiond goes on without them", zap.Error(err))
		}
	}()
}

// stopMetrics closes the metrics listener and waits for scrapes in flight,
// before the store they read closes.
func (d *Daemon) stopMetrics(ctx context.Context) error {
	if d.metricsHTTP == nil {
		return nil
	}
	if err := d.metricsHTTP.Shutdown(ctx); err != nil {
		_ = d.metricsHTTP.Close()
		return err
	}
	return nil
}

// The metrics hear of questions and of the HTTP API's requests.
var (
	_ ask.Listener  = (*metrics.Metrics)(nil)
	_ httpapi.Meter = (*metrics.Metrics)(nil)
)
