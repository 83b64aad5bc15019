package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpAgentCounts are the concurrencies the MCP question tool is measured at.
var mcpAgentCounts = []int{1, 16}

// mcpQuestions is the tool input every agent sends: one question with three
// options and one free-text question. The operator's seedAnswers
// ([["SY215C"],["Black smoke"]]) are a valid reply to it, so the round-trip
// benchmark's operator answers the tool's questions unchanged.
var mcpQuestions = json.RawMessage(`{"questions":[` +
	`{"question":"Equipment model?","header":"Model","options":[` +
	`{"label":"SY215C","description":"21 t excavator"},{"label":"SY365H","description":"36 t excavator"},{"label":"SY75C","description":"7 t excavator"}]},` +
	`{"question":"Describe the symptoms","header":"Symptoms"}]}`)

// elicitForm is the POST /elicit body equivalent to mcpQuestions: the
// message and requestedSchema the tool builds from them (elicit.FromPrompts),
// so both sides store, announce, validate and convert the same question.
// The session id is filled in per agent.
const elicitForm = `{"message":"2 questions: Equipment model?","sessionID":%q,"requestedSchema":{"type":"object","properties":{` +
	`"q1":{"type":"string","title":"Model","description":"Equipment model?","oneOf":[` +
	`{"const":"SY215C","title":"SY215C"},{"const":"SY365H","title":"SY365H"},{"const":"SY75C","title":"SY75C"}]},` +
	`"q2":{"type":"string","title":"Symptoms","description":"Describe the symptoms"}}}}`

// wantToolAnswers is the structured result a replied tool call must return.
var wantToolAnswers = map[string]any{"action": "accept", "answers": []any{[]any{"SY215C"}, []any{"Black smoke"}}}

// mcpSides are the exchanges BenchmarkMCP compares, the MCP tool first.
var mcpSides = []struct {
	name  string
	start func(tb testing.TB, agents int) mcpSide
}{
	{"mcp", startToolSide},
	{"elicit", startElicitSide},
	{"baseline", startBaselineSide},
}

// mcpSide is one system with its agents and operator, kept across the
// repeated runs of one sub-benchmark.
type mcpSide interface {
	// run makes n round trips, agents at a time.
	run(agents, n int) error
	close(tb testing.TB)
}

// BenchmarkMCP measures the question tool on /mcp end to end: each agent
// goroutine holds one MCP session (go-sdk client, Streamable HTTP, connected
// to /mcp?session=ses_…) and calls ask_user_question; the round-trip
// benchmark's operator sees question.asked on its /event stream and replies;
// the call returns the structured answers. Beside it, in the same run:
// questiond's own POST /elicit with the equivalent requestedSchema and the
// same operator (same server, plain HTTP), and the plain net/http baseline's
// create-and-long-poll round trip (see BenchmarkRoundTrip). The elicit line
// carries mcp/elicit, the baseline line mcp/baseline and elicit/baseline.
func BenchmarkMCP(b *testing.B) {
	for _, agents := range mcpAgentCounts {
		rates := make(map[string]float64)
		for _, side := range mcpSides {
			var fx mcpSide
			b.Run(fmt.Sprintf("%s/agents=%d", side.name, agents), func(b *testing.B) {
				if fx == nil {
					fx = side.start(b, agents)
				}
				rate := timeRoundTrips(b, func(n int) error { return fx.run(agents, n) })
				rates[side.name] = rate
				switch side.name {
				case "elicit":
					b.ReportMetric(rates["mcp"]/rate, "mcp/elicit")
				case "baseline":
					b.ReportMetric(rates["mcp"]/rate, "mcp/baseline")
					b.ReportMetric(rates["elicit"]/rate, "elicit/baseline")
				}
			})
			if fx != nil {
				fx.close(b)
			}
		}
		b.Logf("agents=%d: mcp %.0f, elicit %.0f, baseline %.0f roundtrips/s; mcp/elicit %.3f, mcp/baseline %.3f",
			agents, rates["mcp"], rates["elicit"], rates["baseline"], rates["mcp"]/rates["elicit"], rates["mcp"]/rates["baseline"])
	}
}

// TestMCPRoundTrip runs each of the benchmark's exchanges a few times with
// concurrent agents, so its code stays exercised under -race and goleak.
func TestMCPRoundTrip(t *testing.T) {
	for _, side := range mcpSides {
		t.Run(side.name, func(t *testing.T) {
			fx := side.start(t, 4)
			defer fx.close(t)
			if err := fx.run(4, 20); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// toolSide is questiond with one MCP session per agent.
type toolSide struct {
	srv       *server
	operator  *client // the operator's connections
	op        *operator
	transport *http.Transport // the agents' MCP connections
	sessions  []*mcp.ClientSession
}

func startToolSide(tb testing.TB, agents int) mcpSide {
	tb.Helper()
	srv := startQuestiond(tb, operatorQueue(agents))
	c := newClient(srv.url, agents+16)
	fx := &toolSide{srv: srv, operator: c}
	op, err := startOperator(context.Background(), c, agents)
	if err != nil {
		fx.close(tb)
		tb.Fatal(err)
	}
	fx.op = op
	// Each session holds its standalone event stream and one tool call.
	fx.transport = &http.Transport{
		MaxIdleConns:        2*agents + 16,
		MaxIdleConnsPerHost: 2*agents + 16,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	httpClient := &http.Client{Transport: fx.transport}
	mcpClient := mcp.NewClient(&mcp.Implementation{Name: "questiond-bench", Version: "1"}, nil)
	for i := range agents {
		session, err := mcpClient.Connect(context.Background(), &mcp.StreamableClientTransport{
			Endpoint:   fmt.Sprintf("%s/mcp?session=ses_bench%d", srv.url, i),
			HTTPClient: httpClient,
			MaxRetries: -1, // a broken stream is a failure to report, not to hide
		}, nil)
		if err != nil {
			fx.close(tb)
			tb.Fatalf("MCP session %d: %v", i, err)
		}
		fx.sessions = append(fx.sessions, session)
	}
	// Two rounds with every agent busy open the connections the timed runs
	// reuse, so they measure calls, not dialling or session set-up.
	if err := fx.run(agents, 2*agents); err != nil {
		fx.close(tb)
		tb.Fatalf("warming up: %v", err)
	}
	return fx
}

func (fx *toolSide) run(agents, n int) error {
	return runAgents(fx.op, agents, n, func(ctx context.Context, agent int) error {
		return askTool(ctx, fx.sessions[agent])
	})
}

// askTool is one agent's tool call, which must return the operator's answers.
func askTool(ctx context.Context, session *mcp.ClientSession) error {
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "ask_user_question", Arguments: mcpQuestions})
	if err != nil {
		return fmt.Errorf("calling ask_user_question: %w", err)
	}
	if res.IsError || !reflect.DeepEqual(res.StructuredContent, wantToolAnswers) {
		return fmt.Errorf("ask_user_question: isError %v, structuredContent %v, want %v", res.IsError, res.StructuredContent, wantToolAnswers)
	}
	return nil
}

// close ends the MCP sessions first (each sends DELETE /mcp and closes its
// event stream), then the operator and the server.
func (fx *toolSide) close(tb testing.TB) {
	for i, s := range fx.sessions {
		if err := s.Close(); err != nil {
			tb.Errorf("closing MCP session %d: %v", i, err)
		}
	}
	if fx.op != nil {
		fx.op.stop()
	}
	fx.srv.stop()
	fx.operator.close()
	if fx.transport != nil {
		fx.transport.CloseIdleConnections()
	}
}

// elicitSide is questiond answering POST /elicit, one blocking request per
// round trip, each agent in its own session as on the MCP side.
type elicitSide struct {
	srv    *server
	client *client // agents and operator, as in BenchmarkRoundTrip
	op     *operator
	forms  [][]byte // per agent
}

func startElicitSide(tb testing.TB, agents int) mcpSide {
	tb.Helper()
	srv := startQuestiond(tb, operatorQueue(agents))
	c := newClient(srv.url, 2*agents+16)
	fx := &elicitSide{srv: srv, client: c}
	op, err := startOperator(context.Background(), c, agents)
	if err != nil {
		fx.close(tb)
		tb.Fatal(err)
	}
	fx.op = op
	for i := range agents {
		fx.forms = append(fx.forms, fmt.Appendf(nil, elicitForm, fmt.Sprintf("ses_bench%d", i)))
	}
	if err := fx.run(agents, 2*agents); err != nil {
		fx.close(tb)
		tb.Fatalf("warming up: %v", err)
	}
	return fx
}

func (fx *elicitSide) run(agents, n int) error {
	return runAgents(fx.op, agents, n, func(ctx context.Context, agent int) error {
		return elicitOnce(ctx, fx.client, fx.forms[agent])
	})
}

// elicitOnce is one agent's POST /elicit, which must return the answers.
func elicitOnce(ctx context.Context, c *client, form []byte) error {
	var got struct {
		Action  string            `json:"action"`
		Content map[string]string `json:"content"`
	}
	if err := c.exchange(ctx, http.MethodPost, "/elicit", form, http.StatusOK, &got); err != nil {
		return err
	}
	if got.Action != "accept" || got.Content["q1"] != "SY215C" || got.Content["q2"] != "Black smoke" {
		return fmt.Errorf("POST /elicit: %+v, want accept with q1 SY215C and q2 Black smoke", got)
	}
	return nil
}

func (fx *elicitSide) close(testing.TB) {
	if fx.op != nil {
		fx.op.stop()
	}
	fx.srv.stop()
	fx.client.close()
}

// baselineSide is BenchmarkRoundTrip's exchange against the plain net/http
// baseline: create, then long-poll (two agent requests per round trip).
type baselineSide struct{ *roundTripFixture }

func startBaselineSide(tb testing.TB, agents int) mcpSide {
	tb.Helper()
	return baselineSide{newRoundTripFixture(tb, startBaseline, agents)}
}

func (fx baselineSide) run(agents, n int) error { return runRoundTrips(fx.op, fx.client, agents, n) }

func (fx baselineSide) close(testing.TB) { fx.roundTripFixture.close() }
