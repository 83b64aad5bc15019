package bench

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// baseline does questiond's exchanges the plainest honest way: plain
// net/http routing, one mutex over a map of entries whose futures are
// channels, and per-subscriber buffered channels for the event stream. It
// makes the same HTTP round trips and sends the same SSE framing
// (`data: <json>\n\n`) as questiond, but validates nothing, translates no
// schema, and keeps answers as the operator sent them. The gap between the
// two is what questiond's checking, translation, routing and safety cost.
type baseline struct {
	queueLength int           // frames buffered per subscriber before it is dropped
	quit        chan struct{} // closed by shutdown: ends streams and long-polls

	mu      sync.Mutex
	seq     uint64
	entries map[string]*baselineEntry // every question ever asked
	pending map[string]*baselineEntry // those not answered yet
	subs    map[*baselineSub]struct{}
}

type baselineEntry struct {
	seq     uint64
	id      string
	asked   json.RawMessage // the question.asked properties, also the list item
	answers [][]string      // written once, before done is closed
	done    chan struct{}
}

type baselineSub struct {
	frames chan []byte
	gone   chan struct{} // closed when the subscriber is dropped for falling behind
}

func newBaseline(queueLength int) *baseline {
	return &baseline{
		queueLength: queueLength,
		quit:        make(chan struct{}),
		entries:     make(map[string]*baselineEntry),
		pending:     make(map[string]*baselineEntry),
		subs:        make(map[*baselineSub]struct{}),
	}
}

func (s *baseline) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /elicitations", s.create)
	mux.HandleFunc("GET /elicitations/{id}", s.result)
	mux.HandleFunc("GET /question", s.list)
	mux.HandleFunc("POST /question/{id}/reply", s.reply)
	mux.HandleFunc("GET /event", s.events)
	return mux
}

// shutdown ends every stream and long-poll so the HTTP server can close.
func (s *baseline) shutdown() { close(s.quit) }

type baselineAsked struct {
	ID              string          `json:"id"`
	SessionID       string          `json:"sessionID"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

func (s *baseline) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Message         string          `json:"message"`
		RequestedSchema json.RawMessage `json:"requestedSchema"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	id := "que_" + strconv.FormatUint(seq, 10)
	asked, err := json.Marshal(baselineAsked{ID: id, SessionID: "ses_baseline", Message: req.Message, RequestedSchema: req.RequestedSchema})
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e := &baselineEntry{seq: seq, id: id, asked: asked, done: make(chan struct{})}
	s.mu.Lock()
	s.entries[id] = e
	s.pending[id] = e
	s.mu.Unlock()
	s.broadcast("question.asked", asked)
	writeBaselineJSON(w, http.StatusCreated, map[string]string{"id": id, "status": "pending"})
}

func (s *baseline) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	open := make([]*baselineEntry, 0, len(s.pending))
	for _, e := range s.pending {
		open = append(open, e)
	}
	s.mu.Unlock()
	slices.SortFunc(open, func(a, b *baselineEntry) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]json.RawMessage, len(open))
	for i, e := range open {
		out[i] = e.asked
	}
	writeBaselineJSON(w, http.StatusOK, out)
}

func (s *baseline) reply(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Answers [][]string `json:"answers"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := r.PathValue("id")
	s.mu.Lock()
	e := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if e == nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	e.answers = req.Answers
	close(e.done)
	replied, err := json.Marshal(struct {
		SessionID string     `json:"sessionID"`
		RequestID string     `json:"requestID"`
		Answers   [][]string `json:"answers"`
	}{"ses_baseline", id, req.Answers})
	if err == nil {
		s.broadcast("question.replied", replied)
	}
	writeBaselineJSON(w, http.StatusOK, true)
}

// result serves the agent's GET, long-polling up to ?wait= for an answer.
func (s *baseline) result(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	e := s.entries[id]
	s.mu.Unlock()
	if e == nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if wait, err := time.ParseDuration(r.URL.Query().Get("wait")); err == nil && wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-e.done:
		case <-timer.C:
		case <-r.Context().Done():
		case <-s.quit:
		}
		timer.Stop()
	}
	type result struct {
		Action  string                `json:"action"`
		Content map[string][][]string `json:"content"`
	}
	out := struct {
		ID     string  `json:"id"`
		Status string  `json:"status"`
		Result *result `json:"result,omitempty"`
	}{ID: id, Status: "pending"}
	select {
	case <-e.done:
		out.Status, out.Result = "resolved", &result{Action: "accept", Content: map[string][][]string{"answers": e.answers}}
	default:
	}
	writeBaselineJSON(w, http.StatusOK, out)
}

// broadcast queues one frame for every subscriber without waiting; one that
// is queueLength frames behind is dropped, as questiond cuts it off.
func (s *baseline) broadcast(typ string, properties json.RawMessage) {
	s.mu.Lock()
	s.seq++
	event, err := json.Marshal(struct {
		ID         string          `json:"id"`
		Type       string          `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}{"evt_" + strconv.FormatUint(s.seq, 10), typ, properties})
	if err != nil {
		s.mu.Unlock()
		return
	}
	frame := sseFrame(event)
	for sub := range s.subs {
		select {
		case sub.frames <- frame:
		default:
			delete(s.subs, sub)
			close(sub.gone)
		}
	}
	s.mu.Unlock()
}

func (s *baseline) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	sub := &baselineSub{frames: make(chan []byte, s.queueLength), gone: make(chan struct{})}
	s.mu.Lock()
	s.subs[sub] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.subs, sub)
		s.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(sseFrame([]byte(`{"id":"evt_0","type":"server.connected","properties":{}}`))); err != nil {
		return
	}
	flusher.Flush()
	for {
		select {
		case frame := <-sub.frames:
			if _, err := w.Write(frame); err != nil {
				return
			}
			flusher.Flush()
		case <-sub.gone:
			return
		case <-r.Context().Done():
			return
		case <-s.quit:
			return
		}
	}
}

func sseFrame(event []byte) []byte {
	frame := make([]byte, 0, len(event)+8)
	frame = append(frame, "data: "...)
	frame = append(frame, event...)
	return append(frame, "\n\n"...)
}

func writeBaselineJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
