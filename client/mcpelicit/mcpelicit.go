// Package mcpelicit bridges the MCP Go SDK to questiond: Handler is a ready
// mcp.ClientOptions.ElicitationHandler that forwards every form-mode
// elicitation an MCP server sends to questiond, where a human answers it.
//
//	c, _ := client.New(client.Options{Token: os.Getenv("QUESTIOND_TOKEN")})
//	mc := mcp.NewClient(impl, &mcp.ClientOptions{
//		ElicitationHandler: mcpelicit.Handler(c, mcpelicit.Options{Directory: projectDir}),
//	})
//
// It serves both ways servers elicit: server→client elicitation/create
// requests (protocol 2025-11-25 and older) and the input requests of
// protocol 2026-07-28 (CallToolResult.InputRequests), which the SDK's client
// answers through the same handler. The SDK checks the schema before it
// calls the handler and validates the operator's answer against it after.
//
// The SDK hands the handler requestedSchema decoded into a Go map, so the
// server's property order is lost before the bridge sees it: operators get
// the questions sorted by property name. (Agents that call questiond
// directly keep their order; see package client.)
package mcpelicit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/questiond/questiond/client"
)

// Options route the forwarded questions.
type Options struct {
	SessionID string        // the OpenCode session ("ses_…") the questions belong to; "" for a new one each
	Directory string        // the project directory the questions are listed in; "" for every operator
	Timeout   time.Duration // how long a question may stay unanswered (then cancel); 0: questiond's default
}

// Handler returns an ElicitationHandler that asks questiond and returns the
// operator's answer: accept with content, decline, or cancel.
//
// Only form mode is forwarded. A URL-mode request (which a client with this
// handler does not advertise unless its Capabilities say so) is refused with
// JSON-RPC error -32602, as the MCP spec asks of a client for a mode it does
// not support, and as the SDK itself answers unsupported modes; the server's
// Elicit (or the client's CallTool, for input requests) returns that error.
// Nothing is asked in questiond then.
//
// Requests questiond refuses (400: a schema outside the subset it serves)
// become -32602 with questiond's message; other failures are returned as
// errors. When the request's context ends (the server cancelled it, or the
// session closed) the question is withdrawn.
func Handler(c *client.Client, opts Options) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if req == nil || req.Params == nil {
			return nil, invalidParams("elicitation request without params")
		}
		p := req.Params
		if p.Mode == "url" || (p.Mode == "" && (p.URL != "" || p.ElicitationID != "")) {
			return nil, invalidParams("URL-mode elicitation is not supported: questiond forwards form-mode elicitations only")
		}
		if p.RequestedSchema == nil {
			return nil, invalidParams("form-mode elicitation without a requestedSchema: questiond needs one")
		}
		schema, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, invalidParams(fmt.Sprintf("requestedSchema cannot be encoded: %v", err))
		}
		params := client.Params{
			Message:         p.Message,
			RequestedSchema: schema,
			SessionID:       opts.SessionID,
			Directory:       opts.Directory,
			Timeout:         opts.Timeout,
		}
		if len(p.Meta) > 0 {
			params.Meta = p.Meta
		}
		res, err := c.Elicit(ctx, params)
		if err != nil {
			var qe *client.Error
			if errors.Is(err, client.ErrBadRequest) && errors.As(err, &qe) {
				return nil, invalidParams("questiond refused the elicitation: " + qe.Message)
			}
			return nil, fmt.Errorf("asking questiond: %w", err)
		}
		return &mcp.ElicitResult{Action: res.Action, Content: res.Content}, nil
	}
}

func invalidParams(message string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: message}
}
