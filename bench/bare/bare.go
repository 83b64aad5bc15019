// Package bare is the floor questiond is measured against: a plain net/http
// server sending pre-encoded operator answers.
package bare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
)

// Server is the floor every server is measured against: plain net/http
// answering the operator's routes with bytes encoded before the request
// came. Its pending questions are seeded (POST /seed) with the very items
// questiond listed, so GET /question sends the same bytes questiond sends;
// the list body is built once per change, replies only read their body and
// drop the id, and /event sends server.connected and then nothing.
type Server struct {
	mu    sync.Mutex
	ids   []string          // pending, in the order they were seeded
	items map[string][]byte // pending id → its encoded list item
	list  []byte            // GET /question's body, nil when it must be rebuilt
}

var (
	bareConnected = []byte("data: {\"id\":\"evt_0\",\"type\":\"server.connected\",\"properties\":{}}\n\n")
	bareNotFound  = []byte(`{"name":"NotFoundError","data":{"message":"question not found"}}`)
	bareTrue      = []byte("true")
)

// New returns a server with nothing pending.
func New() *Server { return &Server{items: make(map[string][]byte)} }

// Handler serves POST /seed, GET /question, POST /question/{id}/reply and
// GET /event.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /seed", s.seed)
	mux.HandleFunc("GET /question", s.listQuestions)
	mux.HandleFunc("POST /question/{id}/reply", s.reply)
	mux.HandleFunc("GET /event", s.events)
	return mux
}

// seed adds the items of a JSON array of pending questions, each keeping
// its bytes exactly.
func (s *Server) seed(w http.ResponseWriter, r *http.Request) {
	var items []json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&items); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, item := range items {
		var q struct{ ID string }
		if err := json.Unmarshal(item, &q); err != nil || q.ID == "" {
			http.Error(w, "an item without an id", http.StatusBadRequest)
			return
		}
		s.ids = append(s.ids, q.ID)
		s.items[q.ID] = item
	}
	s.list = nil
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) listQuestions(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	if s.list == nil {
		var b bytes.Buffer
		b.WriteByte('[')
		for i, id := range s.ids {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(s.items[id])
		}
		b.WriteByte(']')
		s.list = b.Bytes()
	}
	list := s.list
	s.mu.Unlock()
	writeBare(w, http.StatusOK, list)
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	id := r.PathValue("id")
	s.mu.Lock()
	_, found := s.items[id]
	if found {
		delete(s.items, id)
		for i, pending := range s.ids {
			if pending == id {
				s.ids = append(s.ids[:i], s.ids[i+1:]...)
				break
			}
		}
		s.list = nil
	}
	s.mu.Unlock()
	if !found {
		writeBare(w, http.StatusNotFound, bareNotFound)
		return
	}
	writeBare(w, http.StatusOK, bareTrue)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(bareConnected)
	http.NewResponseController(w).Flush()
	<-r.Context().Done()
}

func writeBare(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Serve is a program run as the bare server: it listens on a free loopback port, prints "listening host:port", and serves
// until it is killed (by its parent, or by the kernel when the parent dies).
func Serve() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ListeningPrefix + ln.Addr().String())
	srv := &http.Server{Handler: New().Handler()}
	return srv.Serve(ln)
}

// ListeningPrefix starts the line Serve prints with its address.
const ListeningPrefix = "listening "
