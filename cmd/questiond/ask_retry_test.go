package main

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// answerLosingProxy forwards TCP to backend, except that the connection
// carrying the first POST /elicitations is dropped once the daemon starts
// answering it: the question exists, and the asker never hears of it.
type answerLosingProxy struct {
	base  string
	ln    net.Listener
	posts atomic.Int64 // POST /elicitations seen
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startAnswerLosingProxy(t *testing.T, backend string) *answerLosingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &answerLosingProxy{base: "http://" + ln.Addr().String(), ln: ln}
	p.wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", backend)
			if err != nil {
				_ = in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			var lose atomic.Bool
			p.wg.Go(func() {
				defer out.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := in.Read(buf)
					if n > 0 && bytes.Contains(buf[:n], []byte("POST /elicitations")) && p.posts.Add(1) == 1 {
						lose.Store(true)
					}
					if n > 0 {
						if _, werr := out.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
			p.wg.Go(func() {
				defer in.Close()
				buf := make([]byte, 32<<10)
				for {
					n, err := out.Read(buf)
					if n > 0 && lose.Load() {
						_ = out.Close() // the answer is lost
						return
					}
					if n > 0 {
						if _, werr := in.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

// `questiond ask` whose create answer is lost sends it again under its
// Idempotency-Key: one question is asked, and the answer is printed.
func TestAskAsksOnceWhenTheCreateAnswerIsLost(t *testing.T) {
	t.Parallel()
	d, _ := askDaemon(t)
	proxy := startAnswerLosingProxy(t, strings.TrimPrefix(d.base, "http://"))
	a := startAsk(t, nil, "", "--server", proxy.base, "--message", "Ship it?", "--confirm")
	q := awaitQuestion(t, d, a, "")
	operator(t, d, "/question/"+q.ID+"/reply", `{"answers":[["Yes"]]}`)
	a.expectOutput(t, `{"action":"accept","content":{"answer":true}}`)
	if n := proxy.posts.Load(); n < 2 {
		t.Fatalf("%d creates went through the proxy, want the lost one and its retry", n)
	}
	if left := pendingQuestions(t, d, ""); len(left) != 0 {
		t.Fatalf("%d questions still pending, want none: the retry asked again", len(left))
	}
}
