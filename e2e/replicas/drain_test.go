package replicas

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/testenv"
)

// A replica stopped with SIGTERM behind deploy/haproxy.cfg is never seen by
// the operators: while their requests (lists and replies) flow through the
// balancer, one replica shuts down — it answers 503 to what it can no longer
// do, closes its listener and its idle connections, then is gone — and no
// operator request gets a 5xx or a broken connection. HAProxy sends each
// such request again to another replica (retry-on with redispatch); before
// deploy/haproxy.cfg had them, the README's configuration answered 503 for
// seconds, until its health checks noticed. The agent's creates, which carry
// Idempotency-Keys, get through the same way.
func TestBalancerHidesAReplicaStoppedWithSIGTERM(t *testing.T) {
	testenv.Heavy(t, "runs haproxy in front of three questiond processes and stops one")
	replicas, lb, host := startDeployedReplicas(t)

	agent := &http.Client{Timeout: 10 * time.Second, Transport: &asClient{host: host, authorization: "Bearer " + lbAgentToken}}
	operator := &http.Client{Timeout: 10 * time.Second, Transport: &asClient{host: host, user: "opencode", password: lbOperatorPassword}}

	var (
		stop              = make(chan struct{})
		stopped           atomic.Bool // the replica has exited
		mu                sync.Mutex
		failures          []string
		failed            int
		served, after     atomic.Int64 // operator requests answered; of them, after the replica exited
		replied           atomic.Int64
		agentFailures     atomic.Int64
		created, attempts atomic.Int64
	)
	fail := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		failed++
		if len(failures) < 20 {
			failures = append(failures, what)
		}
	}
	var flow sync.WaitGroup
	// Agents keep asking (with Idempotency-Keys, which the balancer may
	// send again), so the operators always have something to answer, and
	// some creates reach the stopping replica after it stopped taking
	// questions: those it answers 503 itself.
	for agentN := range 3 {
		flow.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				req, _ := http.NewRequest(http.MethodPost, lb+"/elicitations", strings.NewReader(form))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", fmt.Sprintf(`"drain-%d-%d"`, agentN, n))
				attempts.Add(1)
				res, err := agent.Do(req)
				if err != nil || res.StatusCode >= 500 {
					agentFailures.Add(1)
				} else if res.StatusCode == http.StatusCreated {
					created.Add(1)
				}
				if err == nil {
					res.Body.Close()
				}
			}
		})
	}
	for range 3 {
		flow.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				wasStopped := stopped.Load()
				res, err := operator.Get(lb + "/question")
				if err != nil {
					fail("GET /question: " + err.Error())
					continue
				}
				var listed []struct{ ID string }
				decodeErr := json.NewDecoder(res.Body).Decode(&listed)
				res.Body.Close()
				if res.StatusCode != http.StatusOK || decodeErr != nil {
					fail(fmt.Sprintf("GET /question: %d %v", res.StatusCode, decodeErr))
					continue
				}
				served.Add(1)
				if wasStopped {
					after.Add(1)
				}
				if len(listed) == 0 {
					continue
				}
				id := listed[len(listed)-1].ID
				res, err = operator.Post(lb+"/question/"+id+"/reply", "application/json", strings.NewReader(`{"answers":[["yes"]]}`))
				if err != nil {
					fail("reply: " + err.Error())
					continue
				}
				res.Body.Close()
				switch res.StatusCode {
				case http.StatusOK:
					replied.Add(1)
				case http.StatusNotFound: // another operator answered it first
				default:
					fail(fmt.Sprintf("reply to %s: %d", id, res.StatusCode))
					continue
				}
				served.Add(1)
				if wasStopped {
					after.Add(1)
				}
			}
		})
	}

	time.Sleep(1500 * time.Millisecond)
	before := served.Load()
	victim := replicas[1]
	if err := victim.proc.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exitErr, ok := victim.proc.Wait(20 * time.Second)
	if !ok {
		t.Fatalf("%s did not exit within 20 s of SIGTERM", victim.name)
	}
	if exitErr != nil {
		t.Errorf("%s exited with %v after SIGTERM; want 0", victim.name, exitErr)
	}
	stopped.Store(true)
	// Past the health checks' fall (2 × 2 s), so requests went both to the
	// stopped replica's address and around it.
	time.Sleep(5 * time.Second)
	close(stop)
	flow.Wait()

	t.Logf("operator requests answered: %d before SIGTERM, %d in all, %d after the replica exited; %d replies; agent: %d of %d creates, %d failed",
		before, served.Load(), after.Load(), replied.Load(), created.Load(), attempts.Load(), agentFailures.Load())
	if failed > 0 {
		t.Errorf("operators saw %d failures through the balancer while a replica stopped, first ones:\n%s",
			failed, strings.Join(failures, "\n"))
	}
	if n := agentFailures.Load(); n > 0 {
		t.Errorf("the agent's keyed creates failed %d times through the balancer while a replica stopped", n)
	}
	if before < 10 || after.Load() < 10 || replied.Load() < 3 {
		t.Errorf("too little operator traffic to tell (%d before, %d after, %d replies)", before, after.Load(), replied.Load())
	}
}
