package replicas

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v4"

	"github.com/questiond/questiond/internal/pgtest"
	"github.com/questiond/questiond/internal/testenv"
)

const (
	lbOperatorPassword = "lb-operator-password"
	lbAgentToken       = "lb-agent-token-0123456789"
)

// The deploy/ set-up of docs/replicas.md, run: three replicas started with
// deploy/docker-compose.yml's `command`, behind HAProxy with
// deploy/haproxy.cfg (only the addresses replaced). MCP sessions opened through the balancer land on
// different replicas, and every later request of a session — the tool call,
// the answers to the replica's keep-alive pings, the client's event stream
// — reaches the replica that opened it, so every tool call gets its answer.
// The operator's requests go to any replica.
func TestReadmeLoadBalancerKeepsMCPSessionsOnTheirReplica(t *testing.T) {
	testenv.Heavy(t, "runs haproxy in front of three questiond processes")
	replicas, lb, host := startDeployedReplicas(t)

	agent := &http.Client{Transport: &asClient{host: host, authorization: "Bearer " + lbAgentToken}}
	operator := &http.Client{Timeout: 10 * time.Second, Transport: &asClient{host: host, user: "opencode", password: lbOperatorPassword}}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const sessions = 6
	var clients []*mcp.ClientSession
	for i := range sessions {
		c := mcp.NewClient(&mcp.Implementation{Name: "lb-test", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint: fmt.Sprintf("%s/mcp?session=ses_lb%d", lb, i), HTTPClient: agent,
		}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}) // stateful sessions, which stick to a replica
		if err != nil {
			t.Fatalf("session %d: connect through the balancer: %v", i, err)
		}
		defer cs.Close()
		clients = append(clients, cs)
	}

	// Which replica holds each session: the one that does not answer 404.
	owners := map[string]bool{}
	for i, cs := range clients {
		var holders []string
		for _, r := range replicas {
			if mcpSessionKnown(t, r, cs.ID()) {
				holders = append(holders, r.name)
			}
		}
		if len(holders) != 1 {
			t.Fatalf("session %d (%s) is held by %v, want exactly one replica", i, cs.ID(), holders)
		}
		owners[holders[0]] = true
	}
	if len(owners) < 2 {
		t.Fatalf("every session went to %v: the balancer did not spread them, so stickiness was not tested", owners)
	}

	// Every session calls the question tool; the operator answers each
	// through the balancer once the calls have waited through a few
	// keep-alives (pings the client answers in its session).
	type outcome struct {
		session int
		text    string
		err     error
	}
	results := make(chan outcome, sessions)
	var calls sync.WaitGroup
	for i, cs := range clients {
		calls.Go(func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: map[string]any{
				"questions": []any{map[string]any{"question": fmt.Sprintf("Ship build %d?", i), "options": []any{
					map[string]any{"label": "Yes"}, map[string]any{"label": "No"}}}},
			}})
			o := outcome{session: i, err: err}
			if err == nil && res.IsError {
				o.err = fmt.Errorf("tool error: %v", res.Content)
			} else if err == nil {
				o.text = res.Content[0].(*mcp.TextContent).Text
			}
			results <- o
		})
	}
	asked := waitForQuestions(t, lb, operator, sessions)
	time.Sleep(1500 * time.Millisecond) // three keep-alives of 500 ms
	for _, id := range asked {
		res, err := operator.Post(lb+"/question/"+id+"/reply", "application/json", strings.NewReader(`{"answers":[["Yes"]]}`))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("reply to %s through the balancer: %d", id, res.StatusCode)
		}
	}
	calls.Wait()
	close(results)
	for o := range results {
		if o.err != nil {
			t.Errorf("session %d: the tool call failed: %v", o.session, o.err)
		} else if !strings.Contains(o.text, "Yes") {
			t.Errorf("session %d: the tool call returned %q, not the answer", o.session, o.text)
		}
	}
}

// deployedReplicaSetup returns the replicas' command from
// deploy/docker-compose.yml and the balancer's deploy/haproxy.cfg.
func deployedReplicaSetup(t *testing.T) (command []string, haproxyCfg string) {
	t.Helper()
	compose, err := os.ReadFile("../../deploy/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image   string   `yaml:"image"`
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(compose, &doc); err != nil {
		t.Fatalf("deploy/docker-compose.yml: %v", err)
	}
	var names []string
	for name, svc := range doc.Services {
		if svc.Image == "questiond" {
			names = append(names, name)
			if command != nil && !slices.Equal(command, svc.Command) {
				t.Fatalf("deploy/docker-compose.yml's replicas run different commands: %q and %q", command, svc.Command)
			}
			command = svc.Command
		}
	}
	if len(names) != 3 {
		t.Fatalf("deploy/docker-compose.yml has replicas %v, want three", names)
	}
	cfg, err := os.ReadFile("../../deploy/haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	return command, string(cfg)
}

// replicaArgs turns the compose command into this test's: the same flags
// but --addr, which startProcess sets to a free loopback port. It returns
// the name clients reach the replicas by, the one --allowed-hosts adds.
func replicaArgs(t *testing.T, command []string) (args []string, host string) {
	t.Helper()
	for i := 0; i < len(command); i++ {
		switch command[i] {
		case "--addr":
			i++
			continue
		case "--allowed-hosts":
			if i+1 < len(command) {
				host = strings.Split(command[i+1], ",")[0]
			}
		}
		args = append(args, command[i])
	}
	if host == "" {
		t.Fatalf("deploy/docker-compose.yml's replicas name no --allowed-hosts, so the balancer's Host would be refused: %q", command)
	}
	return args, host
}

// startHAProxy runs haproxy in the foreground on cfg with its bind line on
// a free loopback port and its servers at the replicas' addresses, in
// order, and returns the balancer's base URL once it answers.
// startDeployedReplicas starts the deploy/ set-up: three replicas on one
// fresh PostgreSQL database, as deploy/docker-compose.yml starts them, with
// the operator's password and the agent's token, behind HAProxy with
// deploy/haproxy.cfg. It returns the replicas, the balancer's URL and the
// Host the replicas accept.
func startDeployedReplicas(t *testing.T) (replicas []*replica, lb, host string) {
	t.Helper()
	haproxy := testenv.NeedDebianPackage(t, "haproxy", "haproxy")
	command, haproxyCfg := deployedReplicaSetup(t)
	var args []string
	args, host = replicaArgs(t, command)

	url := pgtest.Database(t)
	env := []string{
		"QUESTIOND_DATABASE_URL=" + url,
		"QUESTIOND_OPERATOR_PASSWORD=" + lbOperatorPassword,
		"QUESTIOND_AGENT_TOKENS=agent=" + lbAgentToken,
	}
	for i := 1; i <= 3; i++ {
		replicas = append(replicas, startProcess(t, fmt.Sprint("questiond-", i), env, args...))
	}
	lb = startHAProxy(t, haproxy, haproxyCfg, replicas)
	return replicas, lb, host
}

func startHAProxy(t *testing.T, haproxy, cfg string, replicas []*replica) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()

	bind := regexp.MustCompile(`(?m)^(\s*)bind .*$`)
	if len(bind.FindAllString(cfg, -1)) != 1 {
		t.Fatalf("deploy/haproxy.cfg should have one bind line:\n%s", cfg)
	}
	cfg = bind.ReplaceAllString(cfg, "${1}bind "+addr)
	server := regexp.MustCompile(`(?m)^(\s*server \S+ )(\S+)(.*)$`)
	found := server.FindAllStringSubmatch(cfg, -1)
	if len(found) != len(replicas) {
		t.Fatalf("deploy/haproxy.cfg has %d servers, want %d:\n%s", len(found), len(replicas), cfg)
	}
	n := 0
	cfg = server.ReplaceAllStringFunc(cfg, func(line string) string {
		m := server.FindStringSubmatch(line)
		line = m[1] + strings.TrimPrefix(replicas[n].base, "http://") + m[3]
		n++
		return line
	})
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(haproxy, "-c", "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c: %v\n%s\n%s", err, out, cfg)
	}
	cmd := exec.Command(haproxy, "-db", "-f", path)
	var logs strings.Builder
	var mu sync.Mutex
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			logs.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		if t.Failed() {
			mu.Lock()
			t.Logf("haproxy:\n%s", logs.String())
			mu.Unlock()
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := http.Get(base + "/global/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-exited:
			t.Fatal("haproxy exited")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the balancer did not answer in 15 s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// asClient sends requests as a client of the deployment: to the name the
// replicas are reached by, with an agent's or the operator's credentials.
type asClient struct {
	host           string
	authorization  string
	user, password string
}

func (c *asClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = c.host
	if c.authorization != "" {
		r.Header.Set("Authorization", c.authorization)
	} else {
		r.SetBasicAuth(c.user, c.password)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSessionKnown reports whether r holds the MCP session id: it answers a
// request in it, where other replicas answer 404.
func mcpSessionKnown(t *testing.T, r *replica, id string) bool {
	t.Helper()
	res := postMCP(t, r, id, lbAgentToken, `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`)
	res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
		return true
	case http.StatusNotFound:
		return false
	}
	t.Fatalf("tools/list in session %s on %s: %d", id, r.name, res.StatusCode)
	return false
}

// waitForQuestions lists the questions pending through the balancer until
// there are n, and returns their ids.
func waitForQuestions(t *testing.T, lb string, operator *http.Client, n int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := operator.Get(lb + "/question")
		if err != nil {
			t.Fatal(err)
		}
		var listed []struct{ ID string }
		err = json.NewDecoder(res.Body).Decode(&listed)
		res.Body.Close()
		if err == nil && len(listed) == n {
			ids := make([]string, 0, n)
			for _, q := range listed {
				ids = append(ids, q.ID)
			}
			return ids
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d questions listed through the balancer after 20 s, want %d (%v)", len(listed), n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
