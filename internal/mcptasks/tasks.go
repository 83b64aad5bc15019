package mcptasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/pending"
)

// Questions is what tasks need of the question service: a question as the
// store holds it now (any replica's), and its withdrawal. ask.Service
// offers both (Store().Get, Withdraw).
type Questions interface {
	Get(ctx context.Context, id string) (*pending.Question, error)
	Withdraw(id string, ending pending.Ending) (*pending.Question, error)
}

// DefaultPollInterval is the polling pace tasks suggest: a person answers
// in seconds or hours, never in milliseconds.
const DefaultPollInterval = 2 * time.Second

// Options configure Tasks.
type Options struct {
	Questions Questions
	// Result is the tool's result for a question that ended with an
	// answer, a dismissal or a timeout: what the tool call would have
	// returned had it waited.
	Result func(q *pending.Question) (*mcp.CallToolResult, error)
	// Retention is how long the store keeps an ended question readable
	// (pending.Options.Retention): a task stays readable that long after
	// its question ended. Zero: pending.DefaultRetention.
	Retention time.Duration
	// PollInterval is the pace suggested to clients; zero:
	// DefaultPollInterval.
	PollInterval time.Duration
	// Now is the clock, for tests; nil: time.Now.
	Now func() time.Time
}

// Tasks serves the tasks extension for the question tools.
type Tasks struct {
	opts Options
}

// New returns Tasks with opts.
func New(opts Options) *Tasks {
	if opts.Retention <= 0 {
		opts.Retention = pending.DefaultRetention
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Tasks{opts: opts}
}

// Capability is what a server declares under capabilities.extensions.
func Capability() map[string]any {
	return map[string]any{Extension: map[string]any{}}
}

// Declared reports whether the _meta of a request declares the extension
// among its client's capabilities, as a 2026-07-28 request carries them
// (SEP-2575: each request may opt in on its own).
func Declared(meta map[string]any) bool {
	caps, _ := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	extensions, _ := caps["extensions"].(map[string]any)
	_, ok := extensions[Extension]
	return ok
}

// Serve adds tasks/get, tasks/update and tasks/cancel to server, for the
// tasks of agent (the agent the request was admitted for; "" for an
// anonymous one) and no other.
func (t *Tasks) Serve(server *mcp.Server, agent string) {
	must(mcp.AddReceivingCustomMethod(server, MethodGet, func(ctx context.Context, _ *mcp.ServerSession, p *Params) (*DetailedTask, error) {
		q, err := t.find(ctx, MethodGet, p, agent)
		if err != nil {
			return nil, err
		}
		return t.detailed(q)
	}))
	must(mcp.AddReceivingCustomMethod(server, MethodUpdate, func(ctx context.Context, _ *mcp.ServerSession, p *Params) (*Ack, error) {
		if err := checkInputResponses(p.InputResponses); err != nil {
			return nil, err
		}
		// questiond's tasks never ask their client for input: there is
		// nothing responses could answer, so they are acknowledged and
		// dropped, as SEP-2663 has a server do with keys it did not ask.
		if _, err := t.find(ctx, MethodUpdate, p, agent); err != nil {
			return nil, err
		}
		return &Ack{ResultType: resultTypeComplete}, nil
	}))
	must(mcp.AddReceivingCustomMethod(server, MethodCancel, func(ctx context.Context, _ *mcp.ServerSession, p *Params) (*Ack, error) {
		q, err := t.find(ctx, MethodCancel, p, agent)
		if err != nil {
			return nil, err
		}
		if q.Ended == nil {
			// Operators see question.rejected; an answer that came first
			// stands (Withdraw returns it), and the ack is the same.
			if _, err := t.opts.Questions.Withdraw(q.ID, pending.EndWithdrawn); err != nil {
				return nil, fmt.Errorf("withdrawing the question of task %s: %w", q.ID, err)
			}
		}
		return &Ack{ResultType: resultTypeComplete}, nil
	}))
}

// must panics on a registration error, which only a method name shadowing
// a standard MCP method causes: a programming error.
func must(err error) {
	if err != nil {
		panic(err)
	}
}

// find is the task p names, if it is one of agent's and the request
// declared the extension.
func (t *Tasks) find(ctx context.Context, method string, p *Params, agent string) (*pending.Question, error) {
	if p == nil || !Declared(p.Meta) {
		return nil, missingCapability(method)
	}
	id, err := checkTaskID(p.TaskID)
	if err != nil {
		return nil, err
	}
	q, err := t.opts.Questions.Get(ctx, id)
	switch {
	case errors.Is(err, pending.ErrNotFound):
		return nil, notFound(id)
	case err != nil:
		return nil, fmt.Errorf("reading task %s: %w", id, err)
	case q.Owner != agent:
		// Another agent's task is not there for this one: the same
		// answer as an id that never existed, so ids tell nothing.
		return nil, notFound(id)
	}
	return q, nil
}

// Created is the CreateTaskResult of question q, just asked.
func (t *Tasks) Created(q *pending.Question) *CreateResult {
	return &CreateResult{ResultType: resultTypeTask, Task: t.task(q)}
}

// detailed is tasks/get's answer for q.
func (t *Tasks) detailed(q *pending.Question) (*DetailedTask, error) {
	d := &DetailedTask{ResultType: resultTypeComplete, Task: t.task(q)}
	switch d.Status {
	case StatusCompleted:
		res, err := t.opts.Result(q)
		if err != nil {
			return nil, fmt.Errorf("the result of task %s: %w", q.ID, err)
		}
		d.Result = res
	case StatusFailed:
		d.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: failure(q.Ended.Ending)}
	}
	return d, nil
}

// task is q as a task.
func (t *Tasks) task(q *pending.Question) Task {
	status, message := Status(q)
	updated, readableUntil := q.CreatedAt, t.opts.Now()
	if q.Ended != nil {
		updated, readableUntil = q.Ended.At, q.Ended.At
	}
	return Task{
		TaskID:        q.ID,
		Status:        status,
		StatusMessage: message,
		CreatedAt:     timestamp(q.CreatedAt),
		LastUpdatedAt: timestamp(updated),
		// The store keeps an ended question readable for Retention after
		// it ended; a pending one is never forgotten. Counted from the
		// creation, as ttlMs is: exact once ended, and a lower bound that
		// grows with every read while the question waits.
		TTLMs:          max(readableUntil.Sub(q.CreatedAt), 0).Milliseconds() + t.opts.Retention.Milliseconds(),
		PollIntervalMs: t.opts.PollInterval.Milliseconds(),
	}
}

// Status is the task status of question q, and a short message saying why.
func Status(q *pending.Question) (status, message string) {
	if q.Ended == nil {
		return StatusWorking, "waiting for an operator's answer"
	}
	switch q.Ended.Ending {
	case pending.EndReplied:
		return StatusCompleted, "answered"
	case pending.EndRejected:
		return StatusCompleted, "dismissed by the operator"
	case pending.EndTimeout:
		return StatusCompleted, "nobody answered in time"
	case pending.EndWithdrawn:
		return StatusCancelled, "withdrawn"
	}
	return StatusFailed, failure(q.Ended.Ending)
}

// failure says why questiond itself ended a task's question.
func failure(ending pending.Ending) string {
	if ending == pending.EndShutdown {
		return "questiond stopped before the question was answered; ask again if you still need the answer"
	}
	return "the question ended before it was answered (" + string(ending) + "); ask again if you still need the answer"
}

// checkTaskID reads params.taskId: a non-empty string.
func checkTaskID(raw json.RawMessage) (string, error) {
	var id string
	if len(raw) == 0 || string(raw) == "null" {
		return "", invalidParams(`params.taskId is missing: send the taskId a tools/call returned`)
	}
	if err := json.Unmarshal(raw, &id); err != nil {
		return "", invalidParams("params.taskId must be a string, got " + string(raw))
	}
	if id == "" {
		return "", invalidParams("params.taskId must not be empty")
	}
	return id, nil
}

// checkInputResponses reads tasks/update's params.inputResponses: an
// object, as SEP-2663 has it.
func checkInputResponses(raw json.RawMessage) error {
	var responses map[string]json.RawMessage
	if len(raw) == 0 {
		return invalidParams("params.inputResponses is missing: tasks/update takes an object of responses by input request id")
	}
	if err := json.Unmarshal(raw, &responses); err != nil || responses == nil {
		return invalidParams("params.inputResponses must be an object of responses by input request id, got " + string(raw))
	}
	return nil
}

func invalidParams(message string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Invalid params: " + message}
}

func notFound(id string) error {
	return invalidParams(fmt.Sprintf("no task %q: it never existed, its result was forgotten (--retention), or it is another agent's", id))
}

// missingCapability is SEP-2575's refusal of a tasks method from a request
// that did not declare the extension.
func missingCapability(method string) error {
	// As mcp.MissingRequiredClientCapabilityData, whose ClientCapabilities
	// would add an empty "roots" the client need not declare.
	data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": Capability()}})
	return &jsonrpc.Error{
		Code:    mcp.CodeMissingRequiredClientCapabilities,
		Message: fmt.Sprintf("%s needs the %s extension: declare it in _meta[%q].extensions", method, Extension, mcp.MetaKeyClientCapabilities),
		Data:    data,
	}
}
