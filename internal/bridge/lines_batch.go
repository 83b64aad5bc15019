package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// JSON-RPC batches (MCP 2025-03-26) on a stdio connection: a batch's
// messages are relayed one by one, the full path's, and the responses to
// its requests go back as one batch, as the SDK's connections do.

// decodeFrame decodes a frame the fast path left: one message, or a batch
// whose requests' responses go back as one batch.
func (c *lineConn) decodeFrame(frame []byte) ([]jsonrpc.Message, error) {
	frame = bytes.Clone(frame) // the messages keep parts of it
	if frame[0] != '[' {
		msg, err := jsonrpc.DecodeMessage(frame)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{msg}, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(frame, &raws); err != nil {
		return nil, fmt.Errorf("a JSON-RPC batch: %w", err)
	}
	if len(raws) == 0 {
		return nil, errors.New("an empty JSON-RPC batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	answer := &batchAnswer{index: map[jsonrpc.ID]int{}}
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			return nil, err
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			if _, twice := answer.index[req.ID]; twice {
				return nil, fmt.Errorf("a JSON-RPC batch has the id %v twice", req.ID.Raw())
			}
			answer.index[req.ID] = len(answer.responses)
			answer.responses = append(answer.responses, nil)
		}
		msgs = append(msgs, msg)
	}
	if len(answer.index) > 0 {
		if err := c.await(answer); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// batchAnswer gathers the responses to a batch's requests.
type batchAnswer struct {
	index     map[jsonrpc.ID]int // request id → its response's place
	responses []*jsonrpc.Response
	missing   int
}

func (c *lineConn) await(answer *batchAnswer) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	for id := range answer.index {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("a JSON-RPC batch reuses the id %v of an unanswered one", id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*batchAnswer{}
	}
	for id := range answer.index {
		c.batches[id] = answer
	}
	answer.missing = len(answer.index)
	return nil
}

// gather keeps resp for its batch's answer, if it belongs to a batch: the
// whole answer (encoded) once resp completes it.
func (c *lineConn) gather(resp *jsonrpc.Response) ([]json.RawMessage, bool) {
	answer, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	delete(c.batches, resp.ID)
	answer.responses[answer.index[resp.ID]] = resp
	if answer.missing--; answer.missing > 0 {
		return nil, true
	}
	out := make([]json.RawMessage, len(answer.responses))
	for i, r := range answer.responses {
		out[i], _ = jsonrpc.EncodeMessage(r)
	}
	return out, true
}
