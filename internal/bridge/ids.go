package bridge

import (
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// sent is a request relayed under an id of the relay's own, waiting for its
// response.
type sent struct {
	orig   jsonrpc.ID // the id its sender gave it
	method string
	params json.RawMessage // kept for the methods whose call may be sent again with input (see inputs.go)
	token  json.RawMessage // the request's progressToken, or nil (see progress.go)
}

// idTable hands out the ids requests are relayed under, in one direction,
// and finds the original again for the response, or the relayed one for a
// cancellation. It is safe for concurrent use.
type idTable struct {
	mu     sync.Mutex
	next   int64
	byOwn  map[int64]sent
	byOrig map[any]int64 // orig.Raw() → own id
}

func newIDTable() *idTable {
	return &idTable{byOwn: map[int64]sent{}, byOrig: map[any]int64{}}
}

// relay returns the id to send the request orig under.
func (t *idTable) relay(orig jsonrpc.ID, method string, params json.RawMessage) jsonrpc.ID {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	s := sent{orig: orig, method: method, token: progressToken(params)}
	if retriable[method] {
		s.params = params
	}
	t.byOwn[t.next] = s
	t.byOrig[orig.Raw()] = t.next
	return ownID(t.next)
}

// answered returns the request that own was relayed for, and forgets it.
func (t *idTable) answered(own jsonrpc.ID) (sent, bool) {
	n, ok := own.Raw().(int64)
	if !ok {
		return sent{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.byOwn[n]
	if !ok {
		return sent{}, false
	}
	delete(t.byOwn, n)
	if t.byOrig[s.orig.Raw()] == n {
		delete(t.byOrig, s.orig.Raw())
	}
	return s, true
}

// relayedAs returns the id orig was relayed under, while it waits for its
// response.
func (t *idTable) relayedAs(orig any) (jsonrpc.ID, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n, ok := t.byOrig[orig]
	if !ok {
		return jsonrpc.ID{}, false
	}
	return ownID(n), true
}

// inFlight lists the requests of method still waiting for a response.
func (t *idTable) inFlight(method string) []sent {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []sent
	for _, s := range t.byOwn {
		if s.method == method {
			out = append(out, s)
		}
	}
	return out
}

// waiting counts the requests of method still waiting for a response.
func (t *idTable) waiting(method string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.byOwn {
		if s.method == method {
			n++
		}
	}
	return n
}

// ownID is the jsonrpc id for n (the package exports no constructor but
// MakeID, which takes JSON's float64).
func ownID(n int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(n))
	return id
}
