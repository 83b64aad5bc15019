package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMetricsAddrIsCheckedInOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--metrics-addr", "9464"}, nil, `--metrics-addr: want host:port, like 127.0.0.1:9464, or off; got "9464"`},
		{nil, map[string]string{"QUESTIOND_METRICS_ADDR": "127.0.0.1:99999"}, `--metrics-addr: want host:port`},
		{[]string{"--addr", "127.0.0.1:4100", "--metrics-addr", "127.0.0.1:4100"}, nil, "--metrics-addr 127.0.0.1:4100 is --addr too"},
	} {
		_, err := parseConfig(tc.args, envOf(tc.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v %v: %v, want one line containing %q", tc.args, tc.env, err, tc.want)
		}
	}
	for _, ok := range []string{"off", "127.0.0.1:0", ":9464", "[::1]:9464"} {
		if _, err := parseConfig([]string{"--metrics-addr", ok}, envOf(nil), io.Discard); err != nil {
			t.Errorf("--metrics-addr %s: %v", ok, err)
		}
	}
}

// runLogs runs the daemon with args until it is ready, calls whileUp (if
// not nil) with its log so far, stops it, and returns its error and log.
func runLogs(t *testing.T, env map[string]string, whileUp func(logs string), args ...string) (string, error) {
	t.Helper()
	logs := &syncBuffer{}
	err := runLoggingTo(t, logs, env, func() {
		if whileUp != nil {
			whileUp(logs.String())
		}
	}, append([]string{"--log-format", "json"}, args...)...)
	return logs.String(), err
}

// runLoggingTo runs the daemon (memory store) with args, its log going to
// out, until it is ready, calls whileUp, stops it, and returns its error.
func runLoggingTo(t *testing.T, out io.Writer, env map[string]string, whileUp func(), args ...string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"--addr", "127.0.0.1:0", "--store", "memory"}, args...), envOf(env), io.Discard, out, ready)
	}()
	select {
	case <-ready:
		whileUp()
		cancel()
		return <-done
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon neither started nor failed")
		return nil
	}
}

// The default address may be taken by another questiond on the machine:
// that one starts without metrics and says so. An address given on purpose
// must be free. (A port of the test's own stands for the default, which
// other tests on the machine may hold or free at any moment.)
func TestMetricsAddrTaken(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg, err := parseConfig([]string{"--metrics-addr", taken.Addr().String()}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ln, warning, err := cfg.listenMetrics(false)
	if ln != nil || err != nil || !strings.HasPrefix(warning, "metrics not served: "+taken.Addr().String()+" is taken") {
		t.Errorf("the default taken: %v %q %v, want no listener and a warning", ln, warning, err)
	}

	for _, via := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"--metrics-addr", taken.Addr().String()}, nil},
		{nil, map[string]string{"QUESTIOND_METRICS_ADDR": taken.Addr().String()}},
	} {
		if _, err := runLogs(t, via.env, nil, via.args...); err == nil || !strings.HasPrefix(err.Error(), "--metrics-addr: ") {
			t.Errorf("%v %v: an address given on purpose and taken: %v, want an error naming --metrics-addr", via.args, via.env, err)
		}
	}
	logs, err := runLogs(t, nil, nil, "--metrics-addr", "off")
	if err != nil || !strings.Contains(logs, `"metrics":"off"`) {
		t.Errorf("--metrics-addr off: %v\n%s", err, logs)
	}
}

// The listening line says where metrics are; they are served there, and
// not on the API's address.
func TestMetricsServedOnTheirOwnAddress(t *testing.T) {
	t.Parallel()
	_, err := runLogs(t, nil, func(logs string) {
		_, rest, ok := strings.Cut(logs, `"metrics":"`)
		url, _, _ := strings.Cut(rest, `"`)
		if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/metrics") {
			t.Fatalf("the listening line names no metrics URL:\n%s", logs)
		}
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "questiond_questions_pending 0") {
			t.Errorf("GET %s: %d\n%.300s", url, resp.StatusCode, body)
		}
		info := fmt.Sprintf(`questiond_build_info{goversion=%q,store="memory",version=%q} 1`, runtime.Version(), version)
		if !strings.Contains(string(body), info+"\n") {
			t.Errorf("GET %s: no line %s", url, info)
		}
		_, rest, _ = strings.Cut(logs, `"addr":"`)
		addr, _, _ := strings.Cut(rest, `"`)
		resp, err = http.Get("http://" + addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET /metrics on the API's address %s: %d, want 404", addr, resp.StatusCode)
		}
	}, "--metrics-addr", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
}
