package mcptasks

import (
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Extension is the tasks extension's name, under capabilities.extensions on
// both sides.
const Extension = "io.modelcontextprotocol/tasks"

// Task statuses (SEP-2663). questiond's tasks never ask their client for
// input, so they are never input_required.
const (
	StatusWorking   = "working"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Methods of the extension this package serves. tasks/result and tasks/list
// (the 2025-11-25 draft's) are gone in SEP-2663: the server answers them
// -32601 as any method it does not offer.
const (
	MethodGet    = "tasks/get"
	MethodUpdate = "tasks/update"
	MethodCancel = "tasks/cancel"
)

// resultType is SEP-2322's discriminator of a result's kind.
const (
	resultTypeTask     = "task"
	resultTypeComplete = "complete"
)

// Task is what every task result carries at its top level: no nested
// "task" member, durations in integer milliseconds.
type Task struct {
	TaskID        string `json:"taskId"`
	Status        string `json:"status"`
	StatusMessage string `json:"statusMessage,omitempty"`
	CreatedAt     string `json:"createdAt"`
	LastUpdatedAt string `json:"lastUpdatedAt"`
	// TTLMs is how long after CreatedAt the task stays readable at least.
	TTLMs          int64 `json:"ttlMs"`
	PollIntervalMs int64 `json:"pollIntervalMs,omitempty"`
}

// CreateResult is a tools/call's answer when it created a task: the task,
// flat, with resultType "task" and neither result nor error.
type CreateResult struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Task
}

// DetailedTask is tasks/get's answer: the task, with the tool's result
// inlined once it completed, or the error once it failed.
type DetailedTask struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
	Task
	Result *mcp.CallToolResult `json:"result,omitempty"`
	Error  *jsonrpc.Error      `json:"error,omitempty"`
}

// Ack is the empty answer of tasks/update and tasks/cancel: the task's new
// state is for the next tasks/get to say.
type Ack struct {
	mcp.ResultBase
	ResultType string `json:"resultType"`
}

// Params are the params of tasks/get, tasks/update and tasks/cancel, read
// loosely so that a wrong type is refused naming its field (checkTaskID)
// rather than with the decoder's words.
type Params struct {
	mcp.ParamsBase
	TaskID         json.RawMessage `json:"taskId,omitempty"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// timestamp is how task times are written: ISO 8601 in UTC, milliseconds.
func timestamp(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
