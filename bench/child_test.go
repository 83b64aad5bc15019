package bench

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// Environment of a test binary re-executed as a server process (see
// startBaselineProcess): serveEnv names the server, queueEnv its queue length.
const (
	serveEnv = "QUESTIOND_BENCH_SERVE"
	queueEnv = "QUESTIOND_BENCH_QUEUE"
)

// listeningPrefix starts the one line a child server prints on stdout, followed
// by its host:port.
const listeningPrefix = "listening "

// serveChild runs the baseline as a process of its own, so that its memory
// can be measured apart from the clients'. It prints where it listens and
// serves until its stdin ends (the parent closed it, or died) or it gets
// SIGTERM. It returns the process's exit status.
func serveChild(which string) int {
	if which != "baseline" {
		fmt.Fprintf(os.Stderr, "%s=%q: only baseline can be served\n", serveEnv, which)
		return 2
	}
	queue, err := strconv.Atoi(os.Getenv(queueEnv))
	if err != nil || queue <= 0 {
		fmt.Fprintf(os.Stderr, "%s=%q: want a positive queue length\n", queueEnv, os.Getenv(queueEnv))
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		return 1
	}
	b := newBaseline(queue)
	srv := &http.Server{Handler: b.handler(), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Printf("%s%s\n", listeningPrefix, ln.Addr())

	parentGone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(parentGone)
	}()
	terminated := make(chan os.Signal, 1)
	signal.Notify(terminated, syscall.SIGTERM, os.Interrupt)
	select {
	case err := <-served:
		fmt.Fprintln(os.Stderr, "baseline: serving:", err)
		return 1
	case <-parentGone:
	case <-terminated:
	}
	b.shutdown()
	if err := srv.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "baseline: closing:", err)
		return 1
	}
	return 0
}
