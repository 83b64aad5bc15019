package mcptasks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/internal/pending"
)

// A question tool learns that its call runs as a task from its context: the
// middleware (Calls) puts a slot there for a tools/call whose request
// declares the extension; the tool hands its question over with Started
// instead of waiting, and the middleware answers with the task.

type slotKey struct{}

// slot carries the question a tool call asked from the tool to Calls.
type slot struct {
	question *pending.Question
}

// Calls is the receiving middleware that runs question tool calls as
// tasks when their request declares the extension; other requests pass
// through untouched.
func (t *Tasks) Calls(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" || req.GetParams() == nil || !Declared(req.GetParams().GetMeta()) {
			return next(ctx, method, req)
		}
		s := &slot{}
		res, err := next(context.WithValue(ctx, slotKey{}, s), method, req)
		if s.question != nil {
			return t.Created(s.question), nil
		}
		// Nothing was asked (bad arguments, a limit): the tool's own
		// answer, at once, as a task that ended before it began would say.
		return res, err
	}
}

// Started hands question q, just asked by a tool call, over to Calls when
// the call runs as a task, and reports whether it does: the tool then
// returns at once instead of waiting for the answer.
func Started(ctx context.Context, q *pending.Question) bool {
	s, ok := ctx.Value(slotKey{}).(*slot)
	if ok {
		s.question = q
	}
	return ok
}

// routedByName are the tasks methods whose Mcp-Name header (SEP-2243,
// extended by SEP-2663) names the task.
var routedByName = map[string]bool{MethodGet: true, MethodUpdate: true, MethodCancel: true}

// CheckRoutingHeader checks the Mcp-Name header of a tasks/get, tasks/update
// or tasks/cancel request against its params.taskId, as SEP-2663 asks of
// servers that read the body: a missing or different one is refused
// (-32020, HTTP 400) before anything is read. Other methods pass (nil).
func CheckRoutingHeader(method string, params json.RawMessage, header http.Header) error {
	if !routedByName[method] {
		return nil
	}
	var p struct {
		TaskID json.RawMessage `json:"taskId"`
	}
	_ = json.Unmarshal(params, &p)
	var id string
	if json.Unmarshal(p.TaskID, &id) != nil || id == "" {
		return nil // the method refuses the params themselves, naming the field
	}
	values := header.Values("Mcp-Name")
	if len(values) == 0 {
		return fmt.Errorf("missing required Mcp-Name header for method %q: it must be the task's id (params.taskId)", method)
	}
	if got := strings.TrimSpace(values[0]); len(values) > 1 || got != id {
		return fmt.Errorf("header mismatch: Mcp-Name header value %q does not match params.taskId %q", strings.Join(values, ", "), id)
	}
	return nil
}
