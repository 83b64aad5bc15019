package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/questiond/questiond/client"
)

// Asker asks questiond and waits for the operator; *client.Client is one.
// Cancelling ctx withdraws the question.
type Asker interface {
	Elicit(ctx context.Context, p client.Params) (*client.Result, error)
}

// elicitParams are elicitation/create's params, the schema kept as raw
// JSON so that its property order reaches the operator as the upstream
// wrote it.
type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	Meta            map[string]any  `json:"_meta"`
	URL             string          `json:"url"`
	ElicitationID   string          `json:"elicitationId"`
}

// asked is an elicitation as questiond asks it.
type asked struct {
	params client.Params
	order  []string // the schema's property order, for the content
	// elicitationID is a URL-mode elicitation's id ("" in form mode): its
	// question offers Open and Decline, and its answer has no content.
	elicitationID string
}

// question turns an elicitation/create into questiond's params, or says
// why it cannot be asked (an *jsonrpc.Error for the upstream).
func (r *Relay) question(raw json.RawMessage) (asked, error) {
	var p elicitParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return asked{}, invalidParams("elicitation/create params: " + err.Error())
	}
	a := asked{params: client.Params{
		Message:   p.Message,
		SessionID: r.opts.SessionID,
		Title:     r.sessionTitle(),
		Directory: r.opts.Directory,
		Timeout:   r.opts.Timeout,
		MCPTool:   r.callInFlight(),
	}}
	if len(p.Meta) > 0 {
		a.params.Meta = p.Meta
	}
	switch {
	case p.Mode == "url" || (p.Mode == "" && (p.URL != "" || p.ElicitationID != "")):
		return r.urlQuestion(a, p)
	case p.Mode != "" && p.Mode != "form":
		return asked{}, invalidParams(fmt.Sprintf("elicitation mode %q is not supported: the bridge declared form and url modes", p.Mode))
	}
	if len(bytes.TrimSpace(p.RequestedSchema)) == 0 || bytes.Equal(bytes.TrimSpace(p.RequestedSchema), []byte("null")) {
		return asked{}, invalidParams("form-mode elicitation without a requestedSchema")
	}
	order, err := propertyOrder(p.RequestedSchema)
	if err != nil {
		return asked{}, invalidParams("requestedSchema: " + err.Error())
	}
	a.params.RequestedSchema, a.order = p.RequestedSchema, order
	return a, nil
}

// answer is the ElicitResult for the upstream, or the JSON-RPC error that
// stands for a failure to ask.
func (r *Relay) answer(a asked, res *client.Result, err error) (json.RawMessage, error) {
	var qe *client.Error
	switch {
	case err == nil && a.elicitationID != "":
		return urlResult(res), nil
	case err == nil:
		return encodeResult(res, a.order)
	case errors.Is(err, client.ErrBadRequest) && errors.As(err, &qe):
		// The schema is outside what questiond serves: nothing was asked.
		return nil, invalidParams("questiond refused the elicitation: " + qe.Message)
	case errors.Is(err, client.ErrUnreachable):
		return nil, internalError(fmt.Sprintf("nobody was asked: %v", err))
	}
	return nil, internalError(fmt.Sprintf("asking questiond at %s: %v", r.opts.Server, err))
}

// encodeResult writes an ElicitResult with its content in the schema's
// property order (a Go map would sort it).
func encodeResult(res *client.Result, order []string) (json.RawMessage, error) {
	var b bytes.Buffer
	action, _ := json.Marshal(res.Action)
	b.WriteString(`{"action":`)
	b.Write(action)
	if res.Action == client.ActionAccept && res.Content != nil {
		b.WriteString(`,"content":{`)
		n := 0
		write := func(k string, v any) error {
			key, _ := json.Marshal(k)
			val, err := json.Marshal(v)
			if err != nil {
				return err
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			b.Write(key)
			b.WriteByte(':')
			b.Write(val)
			return nil
		}
		seen := map[string]bool{}
		for _, k := range order {
			if v, ok := res.Content[k]; ok {
				seen[k] = true
				if err := write(k, v); err != nil {
					return nil, err
				}
			}
		}
		for k, v := range res.Content { // none in practice: questiond answers by the schema's keys
			if !seen[k] {
				if err := write(k, v); err != nil {
					return nil, err
				}
			}
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// propertyOrder lists the keys of the schema's top-level "properties" in
// the order they are written.
func propertyOrder(schema json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var order []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if tok != "properties" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return nil, errors.New(`"properties" is not an object`)
		}
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := key.(string)
			order = append(order, k)
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
	}
	return order, nil
}

func invalidParams(message string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: message}
}

func internalError(message string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: message}
}

// callInFlight names the tool call an elicitation/create belongs to: the
// only tools/call waiting for the upstream's response. Nil with none or
// several: nothing in a 2025 elicitation ties it to one call.
func (r *Relay) callInFlight() *client.MCPTool {
	calls := r.toUpstream.inFlight(methodCallTool)
	if len(calls) != 1 {
		return nil
	}
	return r.mcpTool(calls[0])
}

// mcpTool names the tool of the call s for questiond (so that, in front of
// OpenCode, it can find the session whose tool call waits); nil when s is
// not a tools/call or the bridge has no --name.
func (r *Relay) mcpTool(s sent) *client.MCPTool {
	if s.method != methodCallTool || r.opts.Name == "" {
		return nil
	}
	var call struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(s.params, &call) != nil || call.Name == "" {
		return nil
	}
	return &client.MCPTool{Server: r.opts.Name, Name: call.Name}
}

// sessionTitle is "<name> via <host>", so operators see which server of
// which host asks; "" without a name (questiond's default title then).
func (r *Relay) sessionTitle() string {
	r.mu.Lock()
	hostName := r.client.name
	r.mu.Unlock()
	switch {
	case r.opts.Name == "":
		return ""
	case hostName == "":
		return r.opts.Name
	}
	return r.opts.Name + " via " + hostName
}
