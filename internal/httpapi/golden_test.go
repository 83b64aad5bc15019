package httpapi_test

// Golden tests: the exchanges recorded from a real OpenCode server
// (shared/golden, beside the repository) replayed against questiond, byte for
// byte on the way in, compared by status, headers and JSON shape on the way out.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/questiond/questiond/internal/httpapi"

	"github.com/questiond/questiond/internal/testenv"
)

// TestGoldenOpenCodeExchanges replays every recorded question-API exchange, in
// the recorded order, against one questiond, and expects OpenCode's answer
// except where the table says questiond differs on purpose.
func TestGoldenOpenCodeExchanges(t *testing.T) {
	t.Parallel()
	dir := goldenDir(t)
	transcripts := loadTranscripts(t, dir)
	asked := recordedQuestions(t, loadRecordedStream(t, dir, "sse-global-event-main"))

	for _, tr := range transcripts {
		if _, ok := goldenCases[tr.name]; !ok {
			t.Errorf("transcript %s has no entry in goldenCases: decide how questiond should answer it", tr.name)
		}
	}
	for name := range goldenCases {
		if !slices.ContainsFunc(transcripts, func(tr transcript) bool { return tr.name == name }) {
			t.Errorf("goldenCases names %s, which is not among the recorded transcripts", name)
		}
	}

	g := &goldenReplay{h: newHarness(t, httpapi.Options{}), asked: asked, ids: map[string]string{}}
	for _, tr := range transcripts {
		c, ok := goldenCases[tr.name]
		if !ok {
			continue
		}
		t.Run(tr.name, func(t *testing.T) { g.run(t, tr, c) })
	}
}

// goldenCase says how questiond should answer one recorded exchange.
type goldenCase struct {
	kind goldenKind
	// why explains a skipped exchange; for a deviation it cites docs/http.md.
	why string
	// exact compares the body byte for byte (after id substitution) instead
	// of by JSON shape; only for bodies that depend on neither ids nor the clock.
	exact     bool
	deviation *goldenDeviation
}

type goldenKind int

const (
	// replayed: questiond must answer as OpenCode did.
	replayed goldenKind = iota
	// supporting: an OpenCode-only call the recording made to get a question
	// asked or to look around; questiond has no such route.
	supporting
	// asks stands in for OpenCode's prompt_async: where OpenCode's LLM
	// raised the question through its question tool, an agent asks the same
	// form through POST /elicitations.
	asks
	// deviates: questiond differs on purpose; both sides are asserted.
	deviates
)

// goldenDeviation pins a deliberate difference from both ends: the recording
// must still show OpenCode's behaviour and questiond must show its own, so the
// test fails when either changes.
type goldenDeviation struct {
	openCode, ours goldenExpect
	// restore brings questiond back to the state the recording was in after
	// this exchange, so the exchanges after it replay unchanged.
	restore func(t *testing.T, g *goldenReplay)
}

// goldenExpect is one side of a deviation.
type goldenExpect struct {
	status      int
	contentType string
	// body is a JSON template compared by shape (or byte for byte when exact);
	// empty means "the recorded body, compared by shape".
	body  string
	exact bool
	// header lists header values that must be present exactly; "" means absent.
	header map[string]string
}

const (
	whySession = "OpenCode chat-session bookkeeping the recorder needed to get a question asked; " +
		"questiond has no sessions of its own (an agent names one in POST /elicitations)"
	whyV2 = "OpenCode's v2 /api routes keep a question store the question tool does not use " +
		"(INDEX.md: informative); questiond serves the v1 /question routes only"
	whyPrompt = "OpenCode's LLM asked here through its question tool; an agent asks the same form through POST /elicitations"

	bodyBadPayload = `{"name":"BadRequest","data":{"message":"","kind":"Payload"}}`
)

// answersValidated cites docs/http.md, "Where questiond differs from OpenCode on
// purpose", first bullet ("Answers are validated"): OpenCode takes any reply,
// questiond answers 400 Payload and keeps the question pending.
var answersValidated = &goldenDeviation{
	openCode: goldenExpect{status: 200, contentType: "application/json", body: "true", exact: true},
	ours:     goldenExpect{status: 400, contentType: "application/json", body: bodyBadPayload},
	restore:  stillPendingThenAnswered,
}

// goldenCases is INDEX.md as questiond should answer it, one entry per transcript.
var goldenCases = map[string]goldenCase{
	"01-get-question-empty":                  {},
	"02-get-session-status-idle":             {kind: supporting, why: whySession},
	"03-r1-post-session":                     {kind: supporting, why: whySession},
	"04-r1-post-prompt-async":                {kind: asks, why: whyPrompt},
	"05-r1-get-question-pending":             {},
	"06-r1-get-api-session-question":         {kind: supporting, why: whyV2},
	"07-r1-get-api-question-request":         {kind: supporting, why: whyV2},
	"08-r1-get-question-with-origin":         {},
	"09-r1-options-preflight-reply":          {exact: true},
	"10-r1-reply-unknown-id":                 {exact: true},
	"11-r1-reply-id-without-que-prefix":      {exact: true},
	"12-r1-reply-unknown-id-missing-answers": {exact: true},
	"13-r1-reply-unknown-id-no-content-type": {exact: true},
	// http-design.md: "Every JSON response: Content-Type: application/json,
	// Vary: Origin". OpenCode leaves Vary out for an origin it does not allow,
	// yet the answer does vary by Origin (an allowed one gets
	// Access-Control-Allow-Origin), so questiond always sends it. docs/http.md's
	// list of deliberate differences does not mention this one.
	"14-r1-get-question-foreign-origin": {kind: deviates, why: "http-design.md: every JSON response carries Vary: Origin", deviation: &goldenDeviation{
		openCode: goldenExpect{status: 200, contentType: "application/json", header: map[string]string{"Vary": "", "Access-Control-Allow-Origin": ""}},
		ours:     goldenExpect{status: 200, contentType: "application/json", header: map[string]string{"Vary": "Origin", "Access-Control-Allow-Origin": ""}},
	}},
	// docs/http.md: "Malformed JSON is a 400, not OpenCode's 500 UnknownError."
	"15-r1-reply-malformed-json": {kind: deviates, why: "docs/http.md: Malformed JSON is a 400", deviation: &goldenDeviation{
		openCode: goldenExpect{status: 500, contentType: "application/json",
			body: `{"name":"UnknownError","data":{"message":"Unexpected server error. Check server logs for details.","ref":""}}`},
		ours: goldenExpect{status: 400, contentType: "application/json", body: bodyBadPayload},
	}},
	"16-r1-reply-empty-body":                      {exact: true},
	"17-r1-reply-missing-answers":                 {exact: true},
	"18-r1-reply-answers-not-array":               {exact: true},
	"19-r1-reply-answers-flat-strings":            {exact: true},
	"20-r1-get-question-still-pending":            {},
	"21-r1-reply-ok":                              {exact: true},
	"22-r1-reply-again-same-id":                   {exact: true},
	"23-r1-reject-after-reply":                    {exact: true},
	"24-r1-get-question-after-reply":              {},
	"25-r2-post-session":                          {kind: supporting, why: whySession},
	"26-r2-post-prompt-async":                     {kind: asks, why: whyPrompt},
	"27-r2-get-question-pending":                  {},
	"28-r2-reject-unknown-id":                     {exact: true},
	"29-r2-reject-id-without-que-prefix":          {exact: true},
	"30-r2-reject-unknown-id-malformed-json-body": {exact: true},
	// docs/http.md: "Unknown paths get a JSON 404 and wrong methods a JSON 405,
	// where OpenCode serves its web UI with 200 text/html."
	"31-r2-get-on-reject-route": {kind: deviates, why: "docs/http.md: wrong methods get a JSON 405", deviation: &goldenDeviation{
		openCode: goldenExpect{status: 200, contentType: "text/html"},
		ours: goldenExpect{status: 405, contentType: "application/json", body: `{"name":"MethodNotAllowed","data":{"message":""}}`,
			header: map[string]string{"Allow": "POST"}},
	}},
	"32-r2-reject-ok":                 {exact: true},
	"33-r2-reject-again-same-id":      {exact: true},
	"34-r2-reply-after-reject":        {exact: true},
	"35-r2-get-question-after-reject": {},
	"36-p1-post-session":              {kind: supporting, why: whySession},
	"37-p1-post-prompt-async":         {kind: asks, why: whyPrompt},
	// Extra top-level fields are ignored by both; the answers are valid.
	"38-p1-reply-extra-field":                 {exact: true},
	"39-p2-post-session":                      {kind: supporting, why: whySession},
	"40-p2-post-prompt-async":                 {kind: asks, why: whyPrompt},
	"41-p2-reply-text-plain-content-type":     {exact: true},
	"42-p2-reply-ok":                          {exact: true},
	"43-p3-post-session":                      {kind: supporting, why: whySession},
	"44-p3-post-prompt-async":                 {kind: asks, why: whyPrompt},
	"45-p3-reply-fewer-answers-unknown-label": {kind: deviates, why: "docs/http.md: Answers are validated", deviation: answersValidated},
	"46-p4-post-session":                      {kind: supporting, why: whySession},
	"47-p4-post-prompt-async":                 {kind: asks, why: whyPrompt},
	"48-p4-reply-empty-answers-array":         {kind: deviates, why: "docs/http.md: Answers are validated", deviation: answersValidated},
	"49-r4-post-session":                      {kind: supporting, why: whySession},
	"50-r4-post-prompt-async":                 {kind: asks, why: whyPrompt},
	"51-r4-api-session-question-reply":        {kind: supporting, why: whyV2},
	"52-r4-reply-ok":                          {exact: true},
	"53-r5a-post-session":                     {kind: supporting, why: whySession},
	"54-r5a-post-prompt-async":                {kind: asks, why: whyPrompt},
	"55-r5b-post-session":                     {kind: supporting, why: whySession},
	"56-r5b-post-prompt-async":                {kind: asks, why: whyPrompt},
	"57-r5-get-question-two-pending":          {},
	"58-r5b-reply-ok":                         {exact: true},
	"59-r5-get-question-one-pending":          {},
	"60-r5a-reject-ok":                        {exact: true},
}

// goldenSchema is the recorded question as an elicitation schema: the headers
// and option labels OpenCode's LLM sent. Symptoms is optional because the
// recording answers it with an empty selection (42).
const goldenSchema = `{
	"type": "object",
	"properties": {
		"model": {"type": "string", "title": "Model", "description": "Equipment model?", "enum": ["SY215C"]},
		"symptoms": {"type": "array", "title": "Symptoms", "description": "Select symptoms",
			"items": {"type": "string", "enum": ["Black smoke", "Low power"]}}
	},
	"required": ["model"]
}`

// goldenReplay is the state carried from one exchange to the next.
type goldenReplay struct {
	h     *harness
	asked map[string]recordedQuestion // by session id
	ids   map[string]string           // recorded que_ id → ours
}

// recordedQuestion is one question.asked of the recording.
type recordedQuestion struct {
	ID        string          `json:"id"`
	SessionID string          `json:"sessionID"`
	Tool      json.RawMessage `json:"tool"`
	Directory string          `json:"-"`
}

func (g *goldenReplay) run(t *testing.T, tr transcript, c goldenCase) {
	switch c.kind {
	case supporting:
		// Not a question-API call: nothing in questiond to compare it with.
		t.Skipf("%s: %s", tr.request.start, c.why)
	case asks:
		g.ask(t, tr)
		return
	}
	res, body := g.send(t, tr.request)
	if c.kind == deviates {
		g.checkDeviation(t, tr, c, res, body)
		return
	}
	g.compareResponse(t, tr.response, res, body, c.exact)
}

// ask creates, through the agent API, the question OpenCode's LLM raised on
// the session of this prompt_async, with the recorded session, tool and
// directory, and remembers which of our ids stands for the recorded one.
func (g *goldenReplay) ask(t *testing.T, tr transcript) {
	_, target, _ := strings.Cut(tr.request.start, " ")
	sessionID := strings.TrimSuffix(strings.TrimPrefix(strings.Fields(target)[0], "/session/"), "/prompt_async")
	rec, ok := g.asked[sessionID]
	if !ok {
		t.Fatalf("the recording has no question.asked on session %s", sessionID)
	}
	c := g.h.create(map[string]any{
		"message":         "Diagnose my machine",
		"requestedSchema": json.RawMessage(goldenSchema),
		"sessionID":       rec.SessionID,
		"directory":       rec.Directory,
		"tool":            rec.Tool,
	})
	if c.SessionID != rec.SessionID {
		t.Fatalf("created question is on session %s, want the recorded %s", c.SessionID, rec.SessionID)
	}
	g.ids[rec.ID] = c.ID
	t.Logf("recorded %s is our %s", rec.ID, c.ID)
}

// subst puts our question ids in place of the recorded ones. The unknown id
// que_00000000000000000000000000 is not recorded as asked and stays.
func (g *goldenReplay) subst(s string) string {
	for rec, ours := range g.ids {
		s = strings.ReplaceAll(s, rec, ours)
	}
	return s
}

// send replays a recorded request on a new connection, as the recorder did:
// the recorded request line, headers and body, with our address in Host, our
// ids in place of the recorded ones and the Content-Length recounted.
func (g *goldenReplay) send(t *testing.T, req rawHTTP) (*http.Response, []byte) {
	t.Helper()
	method, _, _ := strings.Cut(req.start, " ")
	body := g.subst(string(req.body))
	var wire bytes.Buffer
	wire.WriteString(g.subst(req.start) + "\r\n")
	for _, f := range req.fields {
		value := f.value
		switch strings.ToLower(f.name) {
		case "host":
			value = hostOf(g.h)
		case "content-length":
			value = strconv.Itoa(len(body))
		}
		wire.WriteString(f.name + ": " + value + "\r\n")
	}
	wire.WriteString("\r\n" + body)

	conn, err := net.DialTimeout("tcp", hostOf(g.h), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write(wire.Bytes()); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the response to %q: %v", req.start, err)
	}
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("reading the body of the response to %q: %v", req.start, err)
	}
	return res, data
}

func hostOf(h *harness) string { return strings.TrimPrefix(h.URL, "http://") }

// compareResponse holds our response to the recorded one: the status line,
// Content-Type, Vary, every Access-Control-* header, no Connection header,
// and the body (exactly, or by JSON shape).
func (g *goldenReplay) compareResponse(t *testing.T, rec rawHTTP, res *http.Response, body []byte, exact bool) {
	t.Helper()
	if got := res.Proto + " " + res.Status; got != rec.start {
		t.Errorf("status line: got %q, recorded %q (body %s)", got, rec.start, body)
	}
	recHeader := rec.header()
	if want := recHeader.Get("Content-Type"); want != "" && res.Header.Get("Content-Type") != want {
		t.Errorf("Content-Type: got %q, recorded %q", res.Header.Get("Content-Type"), want)
	}
	if want := varyTokens(recHeader); len(want) > 0 {
		if got := varyTokens(res.Header); !slices.Equal(got, want) {
			t.Errorf("Vary: got %v, recorded %v", got, want)
		}
	}
	for name := range mergeKeys(recHeader, res.Header) {
		if !strings.HasPrefix(name, "Access-Control-") {
			continue
		}
		if got, want := res.Header.Values(name), recHeader.Values(name); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, recorded %q", name, got, want)
		}
	}
	checkNoConnectionHeader(t, res)
	want := []byte(g.subst(string(rec.body)))
	if exact {
		if !bytes.Equal(body, want) {
			t.Errorf("body:\n got      %q\n recorded %q", body, want)
		}
		return
	}
	for _, d := range compareShape(want, body) {
		t.Errorf("body shape: %s\n got      %s\n recorded %s", d, body, want)
	}
}

func checkNoConnectionHeader(t *testing.T, res *http.Response) {
	t.Helper()
	if v := res.Header.Values("Connection"); len(v) > 0 || res.Close {
		t.Errorf("Connection header %q: OpenCode sends none and keeps the connection open", v)
	}
}

// checkDeviation asserts both sides of a deliberate difference.
func (g *goldenReplay) checkDeviation(t *testing.T, tr transcript, c goldenCase, res *http.Response, body []byte) {
	t.Helper()
	d := c.deviation
	t.Logf("deliberate difference (%s)", c.why)
	recorded := &http.Response{Header: tr.response.header()}
	recorded.StatusCode, _ = strconv.Atoi(strings.Fields(tr.response.start)[1])
	if problems := d.openCode.mismatches(recorded, []byte(g.subst(string(tr.response.body))), nil); len(problems) > 0 {
		t.Errorf("the recording no longer shows the OpenCode behaviour this deviation is about; review the deviation:\n  %s",
			strings.Join(problems, "\n  "))
	}
	for _, p := range d.ours.mismatches(res, body, []byte(g.subst(string(tr.response.body)))) {
		t.Errorf("questiond: %s (body %s)", p, body)
	}
	checkNoConnectionHeader(t, res)
	if d.restore != nil {
		d.restore(t, g)
	}
}

// mismatches lists how a response differs from e; recorded is the body an
// empty e.body stands for.
func (e goldenExpect) mismatches(res *http.Response, body, recorded []byte) []string {
	var out []string
	if res.StatusCode != e.status {
		out = append(out, fmt.Sprintf("status %d, want %d", res.StatusCode, e.status))
	}
	if got := res.Header.Get("Content-Type"); got != e.contentType {
		out = append(out, fmt.Sprintf("Content-Type %q, want %q", got, e.contentType))
	}
	for name, want := range e.header {
		if got := strings.Join(res.Header.Values(name), ", "); got != want {
			out = append(out, fmt.Sprintf("%s %q, want %q", name, got, want))
		}
	}
	template := []byte(e.body)
	if e.body == "" {
		template = recorded
	}
	switch {
	case template == nil:
	case e.exact:
		if !bytes.Equal(body, template) {
			out = append(out, fmt.Sprintf("body %q, want %q", body, template))
		}
	default:
		for _, d := range compareShape(template, body) {
			out = append(out, "body shape: "+d)
		}
	}
	return out
}

// stillPendingThenAnswered follows a reply questiond refused: the question
// must still be pending, and then gets a valid answer, so that it ends as the
// recording's did (replied).
func stillPendingThenAnswered(t *testing.T, g *goldenReplay) {
	t.Helper()
	var list []struct {
		ID string `json:"id"`
	}
	g.h.do(http.MethodGet, "/question", nil).json(t, &list)
	if len(list) != 1 {
		t.Fatalf("after a refused reply, GET /question lists %d questions, want the refused one still pending", len(list))
	}
	res := g.h.do(http.MethodPost, "/question/"+list[0].ID+"/reply", `{"answers":[["SY215C"],[]]}`)
	if res.Status != http.StatusOK || string(res.Body) != "true" {
		t.Fatalf("valid reply after the refused one: %d %s", res.Status, res.Body)
	}
}

func varyTokens(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Vary") {
		for tok := range strings.SplitSeq(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				out = append(out, http.CanonicalHeaderKey(tok))
			}
		}
	}
	slices.Sort(out)
	return out
}

func mergeKeys(a, b http.Header) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// TestGoldenOpenCodeEventStreams runs the recorded flow (ask → reply, ask →
// reject) with GET /event and GET /global/event open, replaying the recorded
// stream requests, and holds questiond's bytes to the recorded ones: response
// headers, one "data: <compact JSON>\n\n" per chunk and nothing else, and the
// shape of server.connected, question.asked, question.replied and
// question.rejected, envelope included.
func TestGoldenOpenCodeEventStreams(t *testing.T) {
	t.Parallel()
	dir := goldenDir(t)
	idle := loadRecordedStream(t, dir, "sse-event-idle")
	event := loadRecordedStream(t, dir, "sse-event-main")
	global := loadRecordedStream(t, dir, "sse-global-event-main")
	asked := recordedQuestions(t, global)

	replied, rejected := event.first(t, "question.replied"), event.first(t, "question.rejected")
	var firstReply, firstReject struct {
		RequestID string     `json:"requestID"`
		Answers   [][]string `json:"answers"`
	}
	mustUnmarshal(t, replied.properties(t), &firstReply)
	mustUnmarshal(t, rejected.properties(t), &firstReject)
	answeredQ, rejectedQ := questionByID(t, asked, firstReply.RequestID), questionByID(t, asked, firstReject.RequestID)

	h := newHarness(t, httpapi.Options{})
	ours := openRawStream(t, h, event.request)
	oursGlobal := openRawStream(t, h, global.request)
	ours.compareHeader(t, idle.response)
	ours.compareHeader(t, event.response)
	oursGlobal.compareHeader(t, global.response)

	// The first frame proves the subscription is in place before anything is asked.
	compareFrames(t, "server.connected", event.first(t, "server.connected").data, ours.next(t), nil)
	compareFrames(t, "server.connected", global.first(t, "server.connected").data, oursGlobal.next(t), nil)

	ids := map[string]string{}
	expect := func(typ, recordedID string) {
		t.Helper()
		compareFrames(t, typ, event.about(t, typ, recordedID), ours.next(t), ids)
		compareFrames(t, typ, global.about(t, typ, recordedID), oursGlobal.next(t), ids)
	}

	answered := createRecorded(h, answeredQ)
	ids[answeredQ.ID] = answered
	expect("question.asked", answeredQ.ID)
	answers, _ := json.Marshal(map[string]any{"answers": firstReply.Answers})
	if res := h.do(http.MethodPost, "/question/"+answered+"/reply", string(answers)); res.Status != http.StatusOK {
		t.Fatalf("reply: %d %s", res.Status, res.Body)
	}
	expect("question.replied", answeredQ.ID)

	dismissed := createRecorded(h, rejectedQ)
	ids[rejectedQ.ID] = dismissed
	expect("question.asked", rejectedQ.ID)
	if res := h.do(http.MethodPost, "/question/"+dismissed+"/reject", nil); res.Status != http.StatusOK {
		t.Fatalf("reject: %d %s", res.Status, res.Body)
	}
	expect("question.rejected", rejectedQ.ID)
}

func createRecorded(h *harness, q recordedQuestion) string {
	h.t.Helper()
	return h.create(map[string]any{
		"message":         "Diagnose my machine",
		"requestedSchema": json.RawMessage(goldenSchema),
		"sessionID":       q.SessionID,
		"directory":       q.Directory,
		"tool":            q.Tool,
	}).ID
}

func questionByID(t *testing.T, asked map[string]recordedQuestion, id string) recordedQuestion {
	t.Helper()
	for _, q := range asked {
		if q.ID == id {
			return q
		}
	}
	t.Fatalf("the recording never asked %s", id)
	return recordedQuestion{}
}

// compareFrames holds one of our frames (the JSON after "data: ") to a
// recorded one, with the recorded question ids replaced by ours.
func compareFrames(t *testing.T, typ string, recorded, ours []byte, ids map[string]string) {
	t.Helper()
	want := string(recorded)
	for rec, our := range ids {
		want = strings.ReplaceAll(want, rec, our)
	}
	for _, d := range compareShape([]byte(want), ours) {
		t.Errorf("%s frame: %s\n got      %s\n recorded %s", typ, d, ours, want)
	}
}

// recordedStream is a recorded event stream, cut into its frames.
type recordedStream struct {
	name     string
	request  rawHTTP
	response rawHTTP
	frames   []recordedFrame
}

type recordedFrame struct {
	data      []byte // the JSON after "data: "
	typ       string
	directory string // /global/event envelope
}

// properties returns the event's properties, from inside the envelope if any.
func (f recordedFrame) properties(t *testing.T) json.RawMessage {
	t.Helper()
	var e struct {
		Properties json.RawMessage `json:"properties"`
		Payload    *struct {
			Properties json.RawMessage `json:"properties"`
		} `json:"payload"`
	}
	mustUnmarshal(t, f.data, &e)
	if e.Payload != nil {
		return e.Payload.Properties
	}
	return e.Properties
}

func (s *recordedStream) first(t *testing.T, typ string) recordedFrame {
	t.Helper()
	for _, f := range s.frames {
		if f.typ == typ {
			return f
		}
	}
	t.Fatalf("%s has no %s frame", s.name, typ)
	return recordedFrame{}
}

// about returns the recorded frame of typ about the recorded question id.
func (s *recordedStream) about(t *testing.T, typ, id string) []byte {
	t.Helper()
	for _, f := range s.frames {
		if f.typ != typ {
			continue
		}
		var p struct {
			ID        string `json:"id"`
			RequestID string `json:"requestID"`
		}
		mustUnmarshal(t, f.properties(t), &p)
		if p.ID == id || p.RequestID == id {
			return f.data
		}
	}
	t.Fatalf("%s has no %s frame about %s", s.name, typ, id)
	return nil
}

func loadRecordedStream(t *testing.T, dir, name string) *recordedStream {
	t.Helper()
	s := &recordedStream{name: name}
	s.request = readRawHTTP(t, filepath.Join(dir, "transcripts", name+".request"))
	s.response = readRawHTTP(t, filepath.Join(dir, "transcripts", name+".response"))
	chunks, err := parseChunks(s.response.body)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for i, chunk := range chunks {
		data, err := frameData(chunk)
		if err != nil {
			t.Fatalf("%s chunk %d: %v", name, i, err)
		}
		var e struct {
			Type      string `json:"type"`
			Directory string `json:"directory"`
			Payload   *struct {
				Type string `json:"type"`
			} `json:"payload"`
		}
		mustUnmarshal(t, data, &e)
		f := recordedFrame{data: data, typ: e.Type, directory: e.Directory}
		if e.Payload != nil {
			f.typ = e.Payload.Type
		}
		s.frames = append(s.frames, f)
	}
	return s
}

// recordedQuestions returns the questions the recording asked, by session,
// with the directory of their /global/event envelope.
func recordedQuestions(t *testing.T, global *recordedStream) map[string]recordedQuestion {
	t.Helper()
	out := map[string]recordedQuestion{}
	for _, f := range global.frames {
		if f.typ != "question.asked" {
			continue
		}
		var q recordedQuestion
		mustUnmarshal(t, f.properties(t), &q)
		q.Directory = f.directory
		if _, dup := out[q.SessionID]; dup {
			t.Fatalf("%s: two questions asked on session %s", global.name, q.SessionID)
		}
		out[q.SessionID] = q
	}
	if len(out) == 0 {
		t.Fatalf("%s: no question.asked frames", global.name)
	}
	return out
}

// frameData checks that chunk is exactly one OpenCode frame, "data: " +
// compact one-line JSON + "\n\n", and returns the JSON.
func frameData(chunk []byte) ([]byte, error) {
	data, ok := bytes.CutPrefix(chunk, []byte("data: "))
	if !ok {
		return nil, fmt.Errorf("frame %q does not start with \"data: \"", chunk)
	}
	data, ok = bytes.CutSuffix(data, []byte("\n\n"))
	if !ok || bytes.ContainsAny(data, "\r\n") {
		return nil, fmt.Errorf("frame %q is not one data line and a blank line", chunk)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return nil, fmt.Errorf("frame %q is not JSON: %w", chunk, err)
	}
	if !bytes.Equal(compact.Bytes(), data) {
		return nil, fmt.Errorf("frame %q is not compact JSON", chunk)
	}
	return data, nil
}

// parseChunks cuts a chunked body into its chunks. A recorded stream ends
// where the recorder stopped reading, after a whole chunk.
func parseChunks(body []byte) ([][]byte, error) {
	var chunks [][]byte
	for len(body) > 0 {
		line, rest, ok := bytes.Cut(body, []byte("\r\n"))
		if !ok {
			return nil, fmt.Errorf("chunk size line %q without CRLF", line)
		}
		size, err := strconv.ParseUint(string(line), 16, 31)
		if err != nil {
			return nil, fmt.Errorf("chunk size %q: %w", line, err)
		}
		if size == 0 {
			break
		}
		if uint64(len(rest)) < size+2 || string(rest[size:size+2]) != "\r\n" {
			return nil, fmt.Errorf("chunk of %d bytes is cut short or not followed by CRLF", size)
		}
		chunks = append(chunks, rest[:size])
		body = rest[size+2:]
	}
	return chunks, nil
}

// rawStream is a live event stream read off the socket: the header lines as
// sent, then one chunk at a time.
type rawStream struct {
	status string
	fields []headerField
	chunks chan []byte
	errs   chan error
}

// openRawStream sends a recorded stream request to h on a new connection.
func openRawStream(t *testing.T, h *harness, req rawHTTP) *rawStream {
	t.Helper()
	var wire bytes.Buffer
	wire.WriteString(req.start + "\r\n")
	for _, f := range req.fields {
		if strings.EqualFold(f.name, "host") {
			f.value = hostOf(h)
		}
		wire.WriteString(f.name + ": " + f.value + "\r\n")
	}
	wire.WriteString("\r\n")
	conn, err := net.DialTimeout("tcp", hostOf(h), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done, stop := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(stop); conn.Close(); <-done })
	if _, err := conn.Write(wire.Bytes()); err != nil {
		close(done)
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	s := &rawStream{chunks: make(chan []byte, 64), errs: make(chan error, 1)}
	head, err := readHead(r)
	if err != nil {
		close(done)
		t.Fatalf("%s: %v", req.start, err)
	}
	s.status, s.fields = head.start, head.fields
	if s.status != "HTTP/1.1 200 OK" {
		close(done)
		t.Fatalf("%s: %s", req.start, s.status)
	}
	if te := head.header().Get("Transfer-Encoding"); te != "chunked" {
		close(done)
		t.Fatalf("%s: Transfer-Encoding %q, want chunked (one chunk per frame)", req.start, te)
	}
	_ = conn.SetReadDeadline(time.Time{})
	go func() {
		defer close(done)
		for {
			chunk, err := readChunk(r)
			if err != nil {
				s.errs <- err
				return
			}
			select {
			case s.chunks <- chunk:
			case <-stop:
				return
			}
		}
	}()
	return s
}

// next returns the JSON of the next frame, which must be a chunk of its own.
func (s *rawStream) next(t *testing.T) []byte {
	t.Helper()
	select {
	case chunk := <-s.chunks:
		data, err := frameData(chunk)
		if err != nil {
			t.Fatalf("framing: %v", err)
		}
		return data
	case err := <-s.errs:
		t.Fatalf("event stream ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return nil
}

// compareHeader holds our stream's headers to a recorded stream's: every
// recorded header but Date and Transfer-Encoding, with the same spelling and
// value, and no header the recording does not have.
func (s *rawStream) compareHeader(t *testing.T, rec rawHTTP) {
	t.Helper()
	ignored := func(name string) bool {
		return strings.EqualFold(name, "Date") || strings.EqualFold(name, "Transfer-Encoding")
	}
	render := func(fields []headerField) []string {
		var out []string
		for _, f := range fields {
			if !ignored(f.name) {
				out = append(out, f.name+": "+f.value)
			}
		}
		slices.Sort(out)
		return out
	}
	if got, want := render(s.fields), render(rec.fields); !slices.Equal(got, want) {
		t.Errorf("stream headers:\n got      %q\n recorded %q (%s)", got, want, rec.start)
	}
	if s.status != rec.start {
		t.Errorf("stream status line %q, recorded %q", s.status, rec.start)
	}
}

func readHead(r *bufio.Reader) (rawHTTP, error) {
	var head bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return rawHTTP{}, fmt.Errorf("reading the response head: %w", err)
		}
		head.WriteString(line)
		if line == "\r\n" {
			break
		}
	}
	return parseRawHTTP(head.Bytes())
}

func readChunk(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	size, err := strconv.ParseUint(strings.TrimSuffix(line, "\r\n"), 16, 31)
	if err != nil || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("bad chunk size line %q", line)
	}
	if size == 0 {
		return nil, io.EOF
	}
	chunk := make([]byte, size+2)
	if _, err := io.ReadFull(r, chunk); err != nil {
		return nil, err
	}
	if string(chunk[size:]) != "\r\n" {
		return nil, errors.New("chunk not followed by CRLF")
	}
	return chunk[:size], nil
}

// Recorded HTTP messages.

type headerField struct{ name, value string }

// rawHTTP is a request or response exactly as recorded: the start line, the
// header fields in order and as spelled, and the body bytes.
type rawHTTP struct {
	start  string
	fields []headerField
	body   []byte
}

func (m rawHTTP) header() http.Header {
	h := http.Header{}
	for _, f := range m.fields {
		h.Add(f.name, f.value)
	}
	return h
}

func parseRawHTTP(data []byte) (rawHTTP, error) {
	head, body, ok := bytes.Cut(data, []byte("\r\n\r\n"))
	if !ok {
		return rawHTTP{}, errors.New("no blank line after the header")
	}
	lines := strings.Split(string(head), "\r\n")
	m := rawHTTP{start: lines[0], body: body}
	for _, line := range lines[1:] {
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return rawHTTP{}, fmt.Errorf("header line %q has no colon", line)
		}
		m.fields = append(m.fields, headerField{name, strings.TrimSpace(value)})
	}
	return m, nil
}

func readRawHTTP(t *testing.T, path string) rawHTTP {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseRawHTTP(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// transcript is one recorded exchange, NN-name.request and NN-name.response.
type transcript struct {
	name              string
	request, response rawHTTP
}

func loadTranscripts(t *testing.T, dir string) []transcript {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "transcripts", "[0-9][0-9]-*.request"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no transcripts in %s", dir)
	}
	slices.Sort(paths)
	out := make([]transcript, 0, len(paths))
	for _, p := range paths {
		stem := strings.TrimSuffix(p, ".request")
		out = append(out, transcript{
			name:     filepath.Base(stem),
			request:  readRawHTTP(t, p),
			response: readRawHTTP(t, stem+".response"),
		})
	}
	return out
}

// goldenDir finds shared/golden beside the repository: the parent of the
// directory holding go.mod. Without it the tests skip, except in CI, where
// skipping would hide that nothing was compared.
func goldenDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			t.Fatalf("no go.mod in %s or above it", wd)
		}
		root = parent
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "golden")
	if _, err := os.Stat(filepath.Join(dir, "transcripts")); err != nil {
		testenv.Missing(t, "the golden recordings at "+dir, "check out shared/ beside the repository")
	}
	return dir
}

func mustUnmarshal(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}

// JSON shape comparison.

// optionalKeys are the keys OpenCode's OpenAPI document marks optional on the
// question objects (QuestionInfo.multiple and .custom, QuestionRequest.tool):
// either side may leave them out.
var optionalKeys = map[string]bool{"multiple": true, "custom": true, "tool": true}

// sameValueKeys hold values that must be equal, not just of the same type:
// names, kinds and event types, the recorded routing fields questiond is
// given back (session, tool, directory), the headers and labels the golden
// schema produces, and echoed answers.
var sameValueKeys = map[string]bool{
	"_tag": true, "name": true, "kind": true, "type": true,
	"sessionID": true, "requestID": true, "messageID": true, "callID": true,
	"directory": true, "project": true,
	"header": true, "label": true, "multiple": true, "answers": true,
}

// idPrefixes are OpenCode id kinds; a recorded id must be answered with an id
// of the same kind, and a question id with exactly ours for it.
var idPrefixes = []string{"que_", "ses_", "msg_", "evt_", "prt_"}

// jsonNode is a JSON value that keeps the order of object keys.
type jsonNode struct {
	kind   string // object, array, string, number, boolean, null
	keys   []string
	items  []*jsonNode // object values (parallel to keys) or array elements
	scalar any
}

func parseOrdered(data []byte) (*jsonNode, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return n, nil
}

func readNode(dec *json.Decoder) (*jsonNode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &jsonNode{kind: "array"}
		if v == '{' {
			n.kind = "object"
		}
		for dec.More() {
			if n.kind == "object" {
				key, err := dec.Token()
				if err != nil {
					return nil, err
				}
				if slices.Contains(n.keys, key.(string)) {
					return nil, fmt.Errorf("duplicate key %q", key)
				}
				n.keys = append(n.keys, key.(string))
			}
			item, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, item)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &jsonNode{kind: "string", scalar: v}, nil
	case json.Number:
		return &jsonNode{kind: "number", scalar: v.String()}, nil
	case bool:
		return &jsonNode{kind: "boolean", scalar: v}, nil
	default:
		return &jsonNode{kind: "null"}, nil
	}
}

// compareShape lists how ours differs in shape from recorded: keys, their
// order, JSON types, array lengths, and the values sameValueKeys and
// idPrefixes pin down.
func compareShape(recorded, ours []byte) []string {
	rec, err := parseOrdered(recorded)
	if err != nil {
		return []string{fmt.Sprintf("recorded body is not JSON: %v", err)}
	}
	got, err := parseOrdered(ours)
	if err != nil {
		return []string{fmt.Sprintf("body is not JSON: %v", err)}
	}
	var diffs []string
	compareNodes("$", "", rec, got, &diffs)
	return diffs
}

// compareNodes compares at path; key is the nearest object key above, which
// array elements inherit.
func compareNodes(path, key string, rec, got *jsonNode, diffs *[]string) {
	if rec.kind != got.kind {
		*diffs = append(*diffs, fmt.Sprintf("%s: %s, recorded %s", path, got.kind, rec.kind))
		return
	}
	switch rec.kind {
	case "object":
		compareObjects(path, rec, got, diffs)
	case "array":
		if len(rec.items) != len(got.items) {
			*diffs = append(*diffs, fmt.Sprintf("%s: %d elements, recorded %d", path, len(got.items), len(rec.items)))
			return
		}
		for i := range rec.items {
			compareNodes(fmt.Sprintf("%s[%d]", path, i), key, rec.items[i], got.items[i], diffs)
		}
	case "string":
		r, g := rec.scalar.(string), got.scalar.(string)
		for _, p := range idPrefixes {
			if strings.HasPrefix(r, p) && (!strings.HasPrefix(g, p) || p == "que_" && g != r) {
				*diffs = append(*diffs, fmt.Sprintf("%s: %q, recorded %q", path, g, r))
				return
			}
		}
		if sameValueKeys[key] && r != g {
			*diffs = append(*diffs, fmt.Sprintf("%s: %q, recorded %q", path, g, r))
		}
	default:
		if sameValueKeys[key] && rec.scalar != got.scalar {
			*diffs = append(*diffs, fmt.Sprintf("%s: %v, recorded %v", path, got.scalar, rec.scalar))
		}
	}
}

func compareObjects(path string, rec, got *jsonNode, diffs *[]string) {
	var recCommon, gotCommon []string
	for _, k := range rec.keys {
		switch {
		case slices.Contains(got.keys, k):
			recCommon = append(recCommon, k)
		case !optionalKeys[k]:
			*diffs = append(*diffs, fmt.Sprintf("%s: key %q missing", path, k))
		}
	}
	for _, k := range got.keys {
		switch {
		case slices.Contains(rec.keys, k):
			gotCommon = append(gotCommon, k)
		case !optionalKeys[k]:
			*diffs = append(*diffs, fmt.Sprintf("%s: key %q not in the recording", path, k))
		}
	}
	if !slices.Equal(recCommon, gotCommon) {
		*diffs = append(*diffs, fmt.Sprintf("%s: keys in order %q, recorded %q", path, gotCommon, recCommon))
		return
	}
	for _, k := range recCommon {
		ri, gi := slices.Index(rec.keys, k), slices.Index(got.keys, k)
		compareNodes(path+"."+k, k, rec.items[ri], got.items[gi], diffs)
	}
}
