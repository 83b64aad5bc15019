package mcpserver

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/zap"

	"github.com/questiond/questiond/internal/ask"
	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi/wire"
	"github.com/questiond/questiond/internal/mcptasks"
	"github.com/questiond/questiond/internal/pending"
	"github.com/questiond/questiond/internal/session"
)

const askUserDescription = `Ask the user one or more questions and wait for the answers.

Each question has a short header (a few words), the question itself, and either options to choose from ` +
	`(each with a label and a description; set "multiple" to allow several picks) or no options for a free-text answer. ` +
	`Ask only what you cannot decide yourself, and put the recommended option first.

The result says "accept" with one answer list per question (the picked labels, the text, or [] when the user left a question unanswered), ` +
	`"decline" when the user declined to answer, or "cancel" when the user dismissed the questions or no answer came in time.`

const askParentDescription = `Ask your parent session one or more questions and wait for the answers.

Each question has a short header (a few words), the question itself, and either options to choose from ` +
	`(each with a label and a description; set "multiple" to allow several picks) or no options for a free-text answer.

The result says "accept" with one answer list per question (the picked labels, the text, or [] when a question was left unanswered), ` +
	`"decline" when answering was declined, or "cancel" when the questions were dismissed or no answer came in time.`

// askInput is the question tools' input: OpenCode's question-tool shape.
type askInput struct {
	Questions []elicit.Prompt `json:"questions" jsonschema:"the questions to ask, in order"`
}

// askOutput is the question tools' structured result.
type askOutput struct {
	Action  string     `json:"action" jsonschema:"accept, decline or cancel"`
	Answers [][]string `json:"answers,omitempty" jsonschema:"on accept: one list per question: the picked labels, the free text, or empty when unanswered"`
}

// askTool is the handler of the question tool bound to capability: it asks,
// blocks until the question ends, and withdraws it if the call is cancelled.
func (m *Endpoint) askTool(conn *mcpConnection, capability session.Capability) mcp.ToolHandlerFor[askInput, askOutput] {
	tool := toolAskUser
	if capability == session.Parent {
		tool = toolAskParent
	}
	return func(ctx context.Context, req *mcp.CallToolRequest, in askInput) (res *mcp.CallToolResult, out askOutput, err error) {
		defer func() {
			result := out.Action
			if err != nil || result == "" {
				result = "error"
			}
			m.meter.ToolCall(tool, result)
		}()
		// Counted until its question is withdrawn or answered: Release waits
		// for that, so the withdrawal is announced before the bus closes.
		leave, ok := m.questions.EnterCall()
		if !ok {
			return nil, askOutput{}, toolError(ask.ErrShuttingDown)
		}
		defer leave()
		form, schema, shown, err := elicit.FromPrompts(in.Questions, m.opts.Elicit)
		if err != nil {
			return nil, askOutput{}, err
		}
		// The tool call runs outside the HTTP request that opened the MCP
		// session: it acts for the agent that opened it, named as data.
		q, _, err := m.questions.Ask(ctx, ask.Request{
			Owner:  conn.agent,
			Client: mcpClientName(req.Session),
			Form:   form,
			Only:   capability,
			Shown:  shown,
			Check: func(r *ask.Request) error {
				// What the agents' routes check of a body, of which only
				// the message can be wrong here: the session and the
				// directory were checked when the session connected.
				if strings.TrimSpace(form.Message) == "" {
					return wire.NewBadRequest(wire.KindPayload, "message must not be empty\n  at [\"message\"]")
				}
				r.SessionID, r.Directory, r.Message, r.Schema, r.Timeout = conn.sessionID, conn.directory, form.Message, schema, m.opts.DefaultTimeout
				return nil
			},
		})
		if err != nil {
			return nil, askOutput{}, toolError(err)
		}
		if mcptasks.Started(ctx, q) {
			// A task: the middleware answers with it, and tasks/get reads
			// the answer from the store whenever the client asks.
			return nil, askOutput{Action: resultTask}, nil
		}
		ended, err := m.waitForTool(ctx, req, q.ID, conn.beat)
		if err != nil {
			return nil, askOutput{}, err
		}
		return toolResult(ended, in.Questions)
	}
}

// clientNameMaxRunes bounds the MCP client name kept with a question: it
// only says who asks, in a console title.
const clientNameMaxRunes = 40

// mcpClientName is how the MCP client of session ss named itself when it
// initialized: its title if it gave one, else its name, as one short line.
func mcpClientName(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	params := ss.InitializeParams()
	if params == nil || params.ClientInfo == nil {
		return ""
	}
	info := params.ClientInfo
	return wire.OneLine(cmp.Or(strings.TrimSpace(info.Title), info.Name), clientNameMaxRunes)
}

// waitForTool waits for question id to end, sending a progress notification
// (or, without a progress token, a ping) every KeepAlive, so clients and
// proxies with idle timeouts keep the call open. If the call ends first (the client
// cancelled it, its session closed, or questiond is stopping), the question is
// withdrawn: nobody could collect its answer.
//
// beat, for a stateless request, replaces the ping: a server may send no
// request to a stateless client.
func (m *Endpoint) waitForTool(ctx context.Context, req *mcp.CallToolRequest, id string, beat func()) (*pending.Question, error) {
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := m.questions.WaitInBackground(waitCtx, id)
	keepAlive := m.toolKeepAlive(ctx, req, id)
	keepAlive.beat = beat
	defer keepAlive.stop()
	ticker := time.NewTicker(m.opts.KeepAlive)
	defer ticker.Stop()
	for {
		select {
		case got := <-done:
			if got.Err == nil {
				return got.Q, nil
			}
			ending, why := pending.EndWithdrawn, "the call was cancelled"
			if m.questions.Released() {
				ending, why = pending.EndShutdown, "questiond is shutting down"
			} else if ctx.Err() == nil {
				m.log.Error("waiting for a question failed", zap.String("id", id), zap.Error(got.Err))
				ending, why = pending.EndDisconnected, "questiond could not wait for the answer"
			}
			q, err := m.questions.Withdraw(id, ending)
			if err == nil && q.Ended.Ending != ending {
				return q, nil // it ended on its own meanwhile: that answer stands
			}
			return nil, fmt.Errorf("question %s was withdrawn: %s; ask again if you still need the answer", id, why)
		case <-ticker.C:
			keepAlive.send()
		case <-keepAlive.gone:
			// The call's response stream is gone and questiond keeps no
			// events to resume it with: the answer could never be
			// delivered, so operators should not be asked any longer.
			q, err := m.questions.Withdraw(id, pending.EndDisconnected)
			if err == nil && q.Ended.Ending != pending.EndDisconnected {
				return q, nil
			}
			return nil, fmt.Errorf("question %s was withdrawn: the client's connection for this call went away", id)
		}
	}
}

// toolKeepAlive keeps one waiting tool call alive in clients and proxies
// that give up on a silent response stream (Node's fetch after 300 s; the
// TypeScript SDK's request timeout, which progress resets).
type toolKeepAlive struct {
	m     *Endpoint
	ctx   context.Context // the call's: what is sent relates to the call, on its stream
	req   *mcp.CallToolRequest
	id    string
	token any
	start time.Time
	beat  func() // sent instead of a ping, when set

	cancel  context.CancelFunc
	pinging sync.WaitGroup
	busy    atomic.Bool   // a ping is still waiting for its answer
	gone    chan struct{} // closed once a keep-alive could not reach the call's stream
	goneOne sync.Once
}

func (m *Endpoint) toolKeepAlive(ctx context.Context, req *mcp.CallToolRequest, id string) *toolKeepAlive {
	k := &toolKeepAlive{m: m, req: req, id: id, token: req.Params.GetProgressToken(), start: time.Now(), gone: make(chan struct{})}
	k.ctx, k.cancel = context.WithCancel(ctx)
	return k
}

// send sends a progress notification when the client gave a progress token,
// and a ping (or, statelessly, the beat) otherwise: progress may only name a token the client chose, and
// a ping is the one message the server may send about nothing. Either goes
// on the call's own response stream.
func (k *toolKeepAlive) send() {
	if k.token != nil {
		waited := time.Since(k.start)
		err := k.req.Session.NotifyProgress(k.ctx, &mcp.ProgressNotificationParams{
			ProgressToken: k.token,
			Progress:      waited.Seconds(), // grows with every tick, as progress must
			Message:       fmt.Sprintf("waiting for an answer (%s so far)", waited.Round(time.Second)),
		})
		k.sent(err)
		return
	}
	if k.beat != nil {
		k.beat()
		return
	}
	if !k.busy.CompareAndSwap(false, true) {
		return // the client has not answered the last ping yet
	}
	k.pinging.Add(1)
	go func() {
		defer k.pinging.Done()
		defer k.busy.Store(false)
		k.sent(k.req.Session.Ping(k.ctx, nil))
	}()
}

// codeRejectedByTransport is the code of the go-sdk's error for a message
// its transport could not deliver (jsonrpc2.ErrRejected, not exported).
const codeRejectedByTransport = -32005

// sent notes how one keep-alive went, err its send's (or ping's) result: a
// client that answers a ping with an error is still there; a message the
// transport could not deliver means the call's stream is closed.
func (k *toolKeepAlive) sent(err error) {
	var wire *jsonrpc.Error
	if err == nil || k.ctx.Err() != nil || (errors.As(err, &wire) && wire.Code != codeRejectedByTransport) {
		return
	}
	k.m.log.Info("an MCP tool call's stream is gone; withdrawing its question", zap.String("id", k.id), zap.Error(err))
	k.goneOne.Do(func() { close(k.gone) })
}

// stop ends a ping still in flight and waits for it.
func (k *toolKeepAlive) stop() {
	k.cancel()
	k.pinging.Wait()
}

// toolError is the MCP tool result's mapper: the message an agent gets for
// a question that could not be asked, the client's part of the HTTP error
// (wire.HTTPError) it would have got, never internals.
func toolError(err error) error {
	err = wire.HTTPError(err)
	var (
		status *wire.StatusError
		bad    *wire.BadRequest
	)
	switch {
	case errors.As(err, &status):
		return errors.New(status.Message)
	case errors.As(err, &bad):
		return errors.New(bad.Message)
	case errors.Is(err, pending.ErrUnavailable), errors.As(err, new(wire.SessionsUnavailableError)):
		if store := pending.FailedStore(err); store != "" {
			return errors.New(store + " is unavailable, so questiond cannot store questions; nothing was asked; try again later")
		}
		return errors.New("the question store is unavailable; nothing was asked; try again later")
	}
	return err
}

// toolResult is the tool's answer: the structured result, and text for the
// model in OpenCode's own words.
func toolResult(q *pending.Question, prompts []elicit.Prompt) (*mcp.CallToolResult, askOutput, error) {
	r := q.Ended.Result
	// As the operator ended it: a reject without a body (the page's
	// Dismiss, the TUI's Esc) is cancel, "not now"; {"action":"decline"}
	// is decline, "no" — as HTTP agents hear it.
	out := askOutput{Action: r.Action}
	var text string
	switch out.Action {
	case pending.ActionAccept:
		out.Answers = elicit.PromptAnswers(r.Content, len(prompts))
		parts := make([]string, len(prompts))
		for i, p := range prompts {
			answer := "Unanswered"
			if len(out.Answers[i]) > 0 {
				answer = strings.Join(out.Answers[i], ", ")
			}
			// Plain quotes, nothing escaped: OpenCode's own question tool
			// reports answers to the model in exactly this form.
			parts[i] = `"` + strings.TrimSpace(p.Question) + `"="` + answer + `"`
		}
		text = "User has answered your questions: " + strings.Join(parts, ", ") + ". You can now continue with the user's answers in mind."
	case pending.ActionDecline:
		text = "The user dismissed this question"
	default:
		text = cancelText(q)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
}

func cancelText(q *pending.Question) string {
	switch q.Ended.Ending {
	case pending.EndTimeout:
		return fmt.Sprintf("Nobody answered in time (the question timed out after %s); continue with your best judgment", q.Deadline.Sub(q.CreatedAt).Round(time.Second))
	case pending.EndRejected:
		return "The user dismissed this question"
	case pending.EndShutdown:
		return "questiond stopped before the question was answered; ask again if you still need the answer"
	}
	return "The question was cancelled before it was answered (" + string(q.Ended.Ending) + ")"
}
