package notify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/pending"
)

// Event types, in the body's "event" field and the X-Questiond-Event header.
const (
	EventAsked = "question.asked"
	EventEnded = "question.ended"
)

// Body is the JSON a webhook receives. Text makes it a Slack or Mattermost
// incoming-webhook message as it is; the other fields are for programs.
type Body struct {
	Text     string   `json:"text"`
	Event    string   `json:"event"`
	ID       string   `json:"id"` // the event's id, also in X-Questiond-Event-Id
	Link     string   `json:"link,omitempty"`
	Question Question `json:"question"`
	Ending   *Ending  `json:"ending,omitempty"`
}

// Question describes the question an event is about. Message and Questions
// are sent only with Options.IncludeText.
type Question struct {
	ID              string                `json:"id"`
	SessionID       string                `json:"sessionID"`
	AskingSessionID string                `json:"askingSessionID,omitempty"`
	Owner           string                `json:"owner,omitempty"`
	Client          string                `json:"client,omitempty"`
	Directory       string                `json:"directory,omitempty"`
	Headers         []string              `json:"headers"`
	CreatedAt       time.Time             `json:"createdAt"`
	Deadline        time.Time             `json:"deadline,omitzero"`
	Message         string                `json:"message,omitempty"`
	Questions       []elicit.QuestionInfo `json:"questions,omitempty"`
}

// Ending says how a question ended. Content and Answers are sent only with
// Options.IncludeText.
type Ending struct {
	Ending  pending.Ending `json:"ending"`
	Action  string         `json:"action"`
	At      time.Time      `json:"at"`
	Content elicit.Content `json:"content,omitempty"`
	Answers [][]string     `json:"answers,omitempty"`
}

// maxTextMessage bounds the agent's message quoted in Text (with
// IncludeText): Slack shows a few thousand characters of a message at most.
const maxTextMessage = 300

// newBody describes q for event (EventAsked or EventEnded).
func newBody(event, id string, q *pending.Question, link string, includeText bool) Body {
	b := Body{Event: event, ID: id, Link: link, Question: Question{
		ID: q.ID, SessionID: q.SessionID, AskingSessionID: q.AskingSessionID, Owner: q.Owner,
		Client: q.Client, Directory: q.Directory, Headers: make([]string, 0, len(q.Questions)),
		CreatedAt: q.CreatedAt, Deadline: q.Deadline,
	}}
	for _, info := range q.Questions {
		b.Question.Headers = append(b.Question.Headers, info.Header)
	}
	if includeText {
		b.Question.Message, b.Question.Questions = q.Message, q.Questions
	}
	if event == EventEnded && q.Ended != nil {
		b.Ending = &Ending{Ending: q.Ended.Ending, Action: q.Ended.Result.Action, At: q.Ended.At}
		if includeText {
			b.Ending.Content, b.Ending.Answers = q.Ended.Result.Content, q.Ended.Answers
		}
	}
	b.Text = b.text(includeText)
	return b
}

// text is the one line a chat shows. Every value an agent chose goes in a
// code span, so it can neither format the line nor mention anybody.
func (b Body) text(includeText bool) string {
	q := b.Question
	agent := "an agent"
	if q.Owner != "" {
		agent = "agent " + code(q.Owner)
	}
	what := "question " + code(q.ID)
	if len(q.Headers) > 0 {
		what = code(strings.Join(q.Headers, ", "))
	}
	var s strings.Builder
	if b.Ending == nil {
		fmt.Fprintf(&s, "questiond: %s asks %s", agent, what)
	} else {
		fmt.Fprintf(&s, "questiond: %s of %s", what, agent)
	}
	fmt.Fprintf(&s, " in session %s", code(q.SessionID))
	if q.Directory != "" {
		fmt.Fprintf(&s, ", directory %s", code(q.Directory))
	}
	if q.Client != "" {
		fmt.Fprintf(&s, ", via %s", code(q.Client))
	}
	if b.Ending != nil {
		fmt.Fprintf(&s, ", ended: %s (%s)", b.Ending.Ending, b.Ending.Action)
	} else if includeText && q.Message != "" {
		fmt.Fprintf(&s, ": %s", code(cut(q.Message, maxTextMessage)))
	}
	if b.Link != "" {
		fmt.Fprintf(&s, " <%s|open questiond>", escape(b.Link))
	}
	return s.String()
}

// code puts v in a code span on one line, escaped as Slack requires and
// shown as operators see agents' text (elicit.Shown: no bidirectional
// overrides).
func code(v string) string {
	v = strings.Join(strings.Fields(elicit.Shown(v)), " ")
	if v == "" {
		v = "-"
	}
	return "`" + escape(strings.ReplaceAll(v, "`", "'")) + "`"
}

// escape escapes the three characters Slack gives meaning to.
func escape(v string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(v)
}

func cut(v string, runes int) string {
	r := []rune(v)
	if len(r) <= runes {
		return v
	}
	return string(r[:runes]) + "…"
}

// encode returns b as JSON.
func (b Body) encode() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // bodies are read by programs and people, not pasted into HTML
	if err := enc.Encode(b); err != nil {
		return nil, fmt.Errorf("encoding the %s notification of %s: %w", b.Event, b.Question.ID, err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
