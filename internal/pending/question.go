package pending

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/questiond/questiond/internal/elicit"
)

// Tool is OpenCode's QuestionTool: the assistant message and tool call a
// question belongs to.
type Tool struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

// MCPTool names the MCP tool whose call was waiting when a bridged MCP
// server asked (see `questiond bridge`): Server is the name its host knows
// the server by, Name the tool's name on that server.
type MCPTool struct {
	Server string `json:"server"`
	Name   string `json:"name"`
}

// Result is an MCP ElicitResult.
type Result struct {
	Action  string         `json:"action"` // accept | decline | cancel
	Content elicit.Content `json:"content,omitempty"`
}

// MCP ElicitResult actions.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Ending says how a question ended.
type Ending string

// Every way a question can end.
const (
	EndReplied      Ending = "replied"      // the operator answered (accept)
	EndRejected     Ending = "rejected"     // the operator dismissed it (cancel or decline)
	EndTimeout      Ending = "timeout"      // its deadline passed (cancel)
	EndWithdrawn    Ending = "withdrawn"    // the agent withdrew it (cancel)
	EndDisconnected Ending = "disconnected" // the agent's waiting connection went away (cancel)
	EndShutdown     Ending = "shutdown"     // the daemon stopped (cancel)
)

// Outcome is how and when a question ended.
type Outcome struct {
	Ending  Ending     `json:"ending"`
	Result  Result     `json:"result"`
	Answers [][]string `json:"answers,omitempty"` // the operator's raw answers, for EndReplied
	// Filled, for EndReplied, is what the schema's defaults gave the agent
	// for answers left blank, as the operator reads it (labels, Yes/No):
	// Filled[i] is empty where the operator answered question i. Nil when
	// no default filled anything. Histories show it (the schema is not
	// kept once a question has ended).
	Filled [][]string `json:"filled,omitempty"`
	At     time.Time  `json:"at"` // set by the store when zero
}

// Question is one elicitation held by the store: pending until Ended is set.
// The store hands out copies; callers may read them freely and must not
// modify the slices they share.
type Question struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	// AskingSessionID is the session that asked when it asked through its
	// parent: SessionID is then the parent's, where operators see it.
	AskingSessionID string `json:"askingSessionID,omitempty"`
	Directory       string `json:"directory,omitempty"`
	Owner           string `json:"owner,omitempty"` // the agent that asked
	// Client is the MCP client that asked through /mcp, as it names itself
	// (its clientInfo title, else its name); "" for the HTTP routes.
	Client  string `json:"client,omitempty"`
	Message string `json:"message"`
	// Title is the title its asker gave the session it is listed in, ""
	// for none (operators then see the agent and the message).
	Title     string                `json:"title,omitempty"`
	Schema    json.RawMessage       `json:"requestedSchema"`
	Questions []elicit.QuestionInfo `json:"questions"`
	Tool      *Tool                 `json:"tool,omitempty"`
	MCPTool   *MCPTool              `json:"mcpTool,omitempty"`
	// Hosted: questiond stands in front of another server (an OpenCode
	// server), and SessionID is one of that server's sessions, where its
	// clients show the question.
	Hosted    bool      `json:"hosted,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	Deadline  time.Time `json:"deadline,omitzero"` // zero: no timeout
	Ended     *Outcome  `json:"ended,omitempty"`
	// IdempotencyKey is the Idempotency-Key of the request that asked ("":
	// none). With Owner it names the question for retries of that request:
	// the store holds at most one live question per owner and key.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// RequestHash fingerprints that request, so that a retry can be told
	// from a different request sent under the same key. The store keeps it
	// without reading it.
	RequestHash string `json:"requestHash,omitempty"`

	// Form is the parsed elicitation; nil when the record was loaded from
	// somewhere that does not keep it (rebuild with elicit.NewForm), and once
	// the question has ended, when nothing needs it. The store shares it
	// between copies: treat it as read-only.
	Form *elicit.Form `json:"-"`
	// Listing memoizes the question as operators list it, encoded once by
	// the first caller that lists it (httpapi); the record never changes,
	// so neither do those bytes. The store gives every question it holds a
	// memo of its own, shared by the copies it hands out, and drops it, like
	// Form, once the question has ended. Nil means nothing is memoized.
	Listing *Memo `json:"-"`
}

// Memo holds bytes derived from a question's immutable record, computed
// once. Its methods are safe for concurrent use; a nil *Memo computes every
// time.
type Memo struct {
	once  sync.Once
	bytes []byte
}

// Bytes returns the memoized bytes, calling compute to get them the first
// time. The caller must not modify them.
func (m *Memo) Bytes(compute func() []byte) []byte {
	if m == nil {
		return compute()
	}
	m.once.Do(func() { m.bytes = compute() })
	return m.bytes
}

// Filter selects questions for List and Count: pending ones, and with Ended
// retained ended ones too. Empty fields match everything.
type Filter struct {
	// Ended also selects ended questions whose results are still retained:
	// List returns them after the pending ones, in the order they ended.
	Ended bool
	// Directory scopes the list the way OpenCode clients expect: a question
	// created with directory D is listed for D and for callers that give no
	// directory; a question created without one is listed for every caller.
	Directory string
	SessionID string
	Owner     string
}

// Matches reports whether q passes f. It looks only at the fields f names,
// not at whether q has ended. Directories are compared as given.
func (f Filter) Matches(q *Question) bool {
	if q == nil {
		return false
	}
	if f.SessionID != "" && q.SessionID != f.SessionID {
		return false
	}
	if f.Owner != "" && q.Owner != f.Owner {
		return false
	}
	if f.Directory != "" && q.Directory != "" && q.Directory != f.Directory {
		return false
	}
	return true
}

// cloneForStore copies q deeply enough that the caller changing its struct,
// its schema bytes or its questions afterwards leaves the stored record alone.
// Form is shared: it is the parsed, read-only view of Message and Schema.
// Listing is a new, empty memo, as nothing is encoded from the copy yet.
func cloneForStore(q *Question) *Question {
	c := *q
	c.Listing = new(Memo)
	c.Schema = json.RawMessage(bytes.Clone(q.Schema))
	if q.Questions != nil {
		c.Questions = make([]elicit.QuestionInfo, len(q.Questions))
		for i, info := range q.Questions {
			info.Options = slices.Clone(info.Options)
			info.Multiple = cloneBool(info.Multiple)
			info.Custom = cloneBool(info.Custom)
			c.Questions[i] = info
		}
	}
	if q.Tool != nil {
		tool := *q.Tool
		c.Tool = &tool
	}
	if q.MCPTool != nil {
		mcpTool := *q.MCPTool
		c.MCPTool = &mcpTool
	}
	c.Ended = nil
	return &c
}

func cloneBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	v := *b
	return &v
}

// cloneOutcome copies the parts of o a settling caller might reuse.
func cloneOutcome(o Outcome) Outcome {
	o.Result.Content = maps.Clone(o.Result.Content)
	o.Answers = cloneAnswers(o.Answers)
	o.Filled = cloneAnswers(o.Filled)
	return o
}

func cloneAnswers(answers [][]string) [][]string {
	if answers == nil {
		return nil
	}
	out := make([][]string, len(answers))
	for i, a := range answers {
		out[i] = slices.Clone(a)
	}
	return out
}

// shareText makes an ended question keep each text once. elicit.NewForm
// leads the first question shown with the message, so the message becomes
// that text's prefix, sharing its bytes; the schema, which nothing reads
// once a question has ended (the history and the page show the message and
// the questions), is dropped. Callers own q's fields.
func shareText(q *Question) {
	q.Schema = nil
	if len(q.Questions) > 0 && q.Message != "" && strings.HasPrefix(q.Questions[0].Question, q.Message) {
		q.Message = q.Questions[0].Question[:len(q.Message)]
	}
}

// sharesMessage reports whether q's message is the prefix of its first
// question's text, in the same bytes (see shareText).
func sharesMessage(q *Question) bool {
	return q.Message != "" && len(q.Questions) > 0 && len(q.Questions[0].Question) >= len(q.Message) &&
		unsafe.StringData(q.Message) == unsafe.StringData(q.Questions[0].Question)
}
