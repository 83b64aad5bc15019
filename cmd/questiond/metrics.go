package main

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"go.uber.org/zap"
)

// defaultMetricsAddr is where /metrics is served unless --metrics-addr says
// otherwise: loopback, so only this machine (a local Prometheus or agent,
// a sidecar in the pod) can read it.
const defaultMetricsAddr = "127.0.0.1:9464"

// metricsOff is the --metrics-addr that serves no metrics.
const metricsOff = "off"

// checkMetricsAddr refuses a --metrics-addr that is not off or host:port.
func (c *config) checkMetricsAddr() error {
	if c.metricsAddr == metricsOff {
		return nil
	}
	_, port, err := net.SplitHostPort(c.metricsAddr)
	if err != nil || !validPort(port) {
		return fmt.Errorf("--metrics-addr: want host:port, like %s, or %s; got %q", defaultMetricsAddr, metricsOff, c.metricsAddr)
	}
	if c.metricsAddr == c.addr && port != "0" {
		return fmt.Errorf("--metrics-addr %s is --addr too: give metrics a port of their own", c.metricsAddr)
	}
	return nil
}

// listenMetrics binds the metrics listener: nil for off. When the default
// address is taken (a second questiond on this machine) it serves none and
// says so in warning; an address given explicitly must be free.
func (c *config) listenMetrics(explicit bool) (ln net.Listener, warning string, err error) {
	if c.metricsAddr == metricsOff {
		return nil, "", nil
	}
	ln, err = net.Listen("tcp", c.metricsAddr)
	switch {
	case err == nil:
		return ln, "", nil
	case !explicit && errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Sprintf("metrics not served: %s is taken (another questiond?); set --metrics-addr to serve them elsewhere, or %s", c.metricsAddr, metricsOff), nil
	}
	return nil, "", fmt.Errorf("--metrics-addr: %w", err)
}

// metricsField names where metrics are served, for the "listening" line.
func metricsField(ln net.Listener) zap.Field {
	if ln == nil {
		return zap.String("metrics", metricsOff)
	}
	return zap.String("metrics", "http://"+ln.Addr().String()+"/metrics")
}
