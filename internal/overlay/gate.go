package overlay

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	"github.com/questiond/questiond/internal/sse"
)

// The OpenCode TUI shows one question of a session tree at a time (the
// lowest id of the tree's pending ones), hides it while a permission of the
// tree is pending, and renders a question that replaces another in the same
// 16 ms batch of events with the first one's state (a tab that does not
// exist, answers not its own). So on the TUI's streams a Gate keeps at most
// one question per tree announced: a question.asked of a tree that shows
// one, or has a permission pending, or saw one end less than
// QuestionSpacing ago, is held back, whichever server asked it, and goes
// out when the tree is free, oldest first (both servers' ids ascend with
// time). Everything else passes as it comes.
//
// A stream's gate knows only what went out on its stream. A TUI that
// connects again (questiond restarted) keeps what it showed, such as a
// server's question questiond's new stream never announced, so the gate
// may let a question of that tree out behind it. When such a question the
// gate never saw ends, the one let out behind it would replace it in the
// same batch: the gate withdraws that one from the TUI (question.rejected,
// on this stream only) and announces it again QuestionSpacing later, as it
// does for a question it held.

// QuestionSpacing is how long after a question of a session tree ends the
// next one of that tree goes out on the TUI's streams: well over the TUI's
// 16 ms batch of events, so the next question mounts a fresh prompt.
const QuestionSpacing = 250 * time.Millisecond

// Bounds of what one stream's gate keeps. A tree that holds more questions
// than maxHeld lets the next ones pass as they come (the TUI then queues
// them itself); ids remembered as ended are forgotten oldest first.
const (
	maxHeld      = 1024
	maxEnded     = 1024
	maxRootsMemo = 4096
)

// NotHosted is the Note (sse.Message.Note) of a questiond question.asked
// not filed in one of the server's sessions: the TUI cannot show it, so
// the gate lets it pass at once, without asking the server where it is.
const NotHosted = "overlay: not in the server's sessions"

// Roots finds the root session of a session's tree; ok is false when the
// server does not have the session. Upstream implements it.
type Roots interface {
	Root(ctx context.Context, sessionID string) (root string, ok bool, err error)
}

// NewGate returns what makes the Gate of each TUI stream (sse.WithFilter).
func NewGate(roots Roots) sse.NewFilter {
	return func(wake func()) sse.Filter {
		ctx, cancel := context.WithCancel(context.Background())
		return &Gate{
			roots:     roots,
			wake:      wake,
			ctx:       ctx,
			cancel:    cancel,
			rootOf:    make(map[string]string),
			resolving: make(map[string]bool),
			busy:      make(map[string]string),
			announced: make(map[string]sse.Frame),
			notBefore: make(map[string]time.Time),
			ended:     make(map[string]struct{}),
		}
	}
}

// Gate is one TUI stream's sse.Filter. It learns a session's tree from
// Roots on a goroutine of its own, never while the stream waits: a
// question of a session not resolved yet is held meanwhile, and so is
// every question while a permission or shown question of a tree not
// resolved yet is pending (it could be of any tree).
//
// Locks: mu, taken after the stream's (Admit, Due); wake is called holding
// none.
type Gate struct {
	roots  Roots
	wake   func()
	ctx    context.Context // cancelled by Stop: resolutions under way end
	cancel context.CancelFunc
	work   sync.WaitGroup // resolutions under way

	mu        sync.Mutex
	stopped   bool
	rootOf    map[string]string    // session → its root; "" when the server does not have it (never gated)
	resolving map[string]bool      // sessions whose root is being asked for
	busy      map[string]string    // questions announced and permissions pending: request id → session
	announced map[string]sse.Frame // questions announced: request id → its question.asked, to withdraw and announce again
	held      []heldQuestion       // question.asked frames held back, lowest id first
	notBefore map[string]time.Time // root → when its next question may go out
	ended     map[string]struct{}  // request ids that ended, so a late question.asked for one is dropped
	endedFIFO []string
	timer     *time.Timer // wakes the stream when the earliest notBefore of a tree with held questions comes
	timerAt   time.Time
}

type heldQuestion struct {
	id, session string
	frame       sse.Frame
}

// What the gate sees in a frame.
type gateKind int

const (
	gateOther gateKind = iota
	gateQuestion
	gatePermission
	gateEnding
)

// classify reads what the gate needs of f: most frames of an OpenCode
// stream (message parts, of any size) are passed after a scan.
func classify(f sse.Frame) (gateKind, Peeked) {
	text := f.Text()
	if !bytes.Contains(text, []byte(`"question.`)) && !bytes.Contains(text, []byte(`"permission.`)) {
		return gateOther, Peeked{}
	}
	p, ok := Peek(text)
	if !ok {
		return gateOther, p
	}
	switch p.Type {
	case "question.asked":
		return gateQuestion, p
	case "permission.asked":
		return gatePermission, p
	case "question.replied", "question.rejected", "permission.replied":
		return gateEnding, p
	}
	return gateOther, p
}

// Admit implements sse.Filter.
func (g *Gate) Admit(f sse.Frame) []sse.Frame {
	kind, p := classify(f)
	if kind == gateOther {
		return []sse.Frame{f}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch kind {
	case gatePermission:
		if p.ID != "" && p.SessionID != "" {
			g.busy[p.ID] = p.SessionID
			g.rootLocked(p.SessionID) // resolved ahead: the tree it holds
		}
	case gateEnding:
		now := time.Now()
		var withdrawn []sse.Frame
		if p.Type != "permission.replied" && g.unseenLocked(p.RequestID) {
			withdrawn = g.withdrawBehindLocked(p.RequestID, p.SessionID, now)
		}
		g.endLocked(p.RequestID, now)
		return append([]sse.Frame{f}, withdrawn...)
	case gateQuestion:
		if !g.admitQuestionLocked(p, f, time.Now()) {
			return nil
		}
	}
	return []sse.Frame{f}
}

// admitQuestionLocked reports whether question.asked frame f goes out
// now; otherwise it is held, or dropped.
func (g *Gate) admitQuestionLocked(p Peeked, f sse.Frame, now time.Time) bool {
	if p.ID == "" || p.SessionID == "" || f.Note == NotHosted {
		return true // not one the TUI can show
	}
	if _, over := g.ended[p.ID]; over {
		return false // it ended before its announcement came (a replay racing its end)
	}
	if _, shown := g.busy[p.ID]; shown {
		return true // announced again (a replay): the TUI keeps one per id
	}
	for _, h := range g.held {
		if h.id == p.ID {
			return false
		}
	}
	root, known := g.rootLocked(p.SessionID)
	if known && (root == "" || g.freeLocked(root, now) && !g.holdsLocked(root) && !g.unplacedLocked()) {
		if root != "" {
			g.busy[p.ID] = p.SessionID
			g.announced[p.ID] = f
		}
		return true
	}
	if len(g.held) >= maxHeld {
		return true
	}
	g.holdLocked(heldQuestion{id: p.ID, session: p.SessionID, frame: f})
	if known {
		g.armLocked(g.notBefore[root], now)
	}
	return false
}

// holdLocked adds h to the held questions, lowest id first.
func (g *Gate) holdLocked(h heldQuestion) {
	i := sort.Search(len(g.held), func(i int) bool { return g.held[i].id > h.id })
	g.held = append(g.held, heldQuestion{})
	copy(g.held[i+1:], g.held[i:])
	g.held[i] = h
}

// unseenLocked reports whether request id is one this stream never
// carried: not announced, held or ended here.
func (g *Gate) unseenLocked(id string) bool {
	if id == "" {
		return false
	}
	if _, ok := g.busy[id]; ok {
		return false
	}
	if _, ok := g.ended[id]; ok {
		return false
	}
	for _, h := range g.held {
		if h.id == id {
			return false
		}
	}
	return true
}

// withdrawBehindLocked handles the end of question endedID of session,
// one the TUI had from before this stream: every question announced here
// in its tree with a higher id waited behind it in the TUI and would
// replace it in the same batch. Each is withdrawn (its question.rejected
// is returned, for this stream only) and held again, to go out
// QuestionSpacing after now, so the TUI mounts it fresh.
func (g *Gate) withdrawBehindLocked(endedID, session string, now time.Time) []sse.Frame {
	root, known := g.rootOf[session]
	if !known || root == "" {
		return nil
	}
	var out []sse.Frame
	for id, s := range g.busy {
		asked, question := g.announced[id]
		if !question || id < endedID {
			continue // a permission, or a question the TUI showed before the one that ended
		}
		if r, ok := g.rootOf[s]; !ok || r != root {
			continue
		}
		rejected, ok := rejectedFrame(asked, s, id)
		if !ok {
			continue
		}
		out = append(out, rejected)
		delete(g.busy, id)
		delete(g.announced, id)
		g.holdLocked(heldQuestion{id: id, session: s, frame: asked})
	}
	if len(out) > 0 {
		g.notBefore[root] = now.Add(QuestionSpacing)
		g.armLocked(now.Add(QuestionSpacing), now)
	}
	return out
}

// rejectedFrame is the question.rejected of question id of session,
// shaped as its question.asked frame asked is (an envelope of
// /global/event, or an event of /event), or false if asked cannot be
// read.
func rejectedFrame(asked sse.Frame, session, id string) (sse.Frame, bool) {
	data := Data(asked.Text())
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return sse.Frame{}, false
	}
	event := top
	payload, enveloped := top["payload"]
	if enveloped {
		event = nil
		if json.Unmarshal(payload, &event) != nil {
			return sse.Frame{}, false
		}
	}
	ended, err := json.Marshal(map[string]any{
		"id":         event["id"],
		"type":       "question.rejected",
		"properties": map[string]string{"sessionID": session, "requestID": id},
	})
	if err != nil {
		return sse.Frame{}, false
	}
	if enveloped {
		top["payload"] = ended
		if ended, err = json.Marshal(top); err != nil {
			return sse.Frame{}, false
		}
	}
	return sse.NewFrame(asked.From, asked.Note, append(append([]byte("data: "), ended...), "\n\n"...)), true
}

// endLocked notes that request id ended: a held question is dropped, an
// announced question or a pending permission frees its tree after
// QuestionSpacing.
func (g *Gate) endLocked(id string, now time.Time) {
	if id == "" {
		return
	}
	if _, seen := g.ended[id]; !seen {
		g.ended[id] = struct{}{}
		g.endedFIFO = append(g.endedFIFO, id)
		if len(g.endedFIFO) > maxEnded {
			delete(g.ended, g.endedFIFO[0])
			g.endedFIFO = g.endedFIFO[1:]
		}
	}
	for i, h := range g.held {
		if h.id == id {
			g.held = append(g.held[:i], g.held[i+1:]...)
			break
		}
	}
	session, ok := g.busy[id]
	if !ok {
		return
	}
	delete(g.busy, id)
	delete(g.announced, id)
	if root, known := g.rootOf[session]; known {
		g.notBefore[root] = now.Add(QuestionSpacing)
		if g.holdsLocked(root) {
			g.armLocked(now.Add(QuestionSpacing), now)
		}
	} else {
		// Its tree is not known yet: it held every tree meanwhile.
		g.armLocked(now.Add(QuestionSpacing), now)
	}
}

// Due implements sse.Filter: the oldest held question of each tree that is
// free now.
func (g *Gate) Due() []sse.Frame {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return nil
	}
	now := time.Now()
	var out []sse.Frame
	waiting := make(map[string]bool) // trees whose oldest held question stays held
	unplaced := false                // an older held question's tree is not known yet: it may be any
	kept := g.held[:0]
	for _, h := range g.held {
		root, known := g.rootLocked(h.session)
		switch {
		case !known:
			unplaced = true
			kept = append(kept, h)
		case root == "":
			out = append(out, h.frame)
		case unplaced || waiting[root]:
			kept = append(kept, h)
		case g.freeLocked(root, now):
			g.busy[h.id] = h.session
			g.announced[h.id] = h.frame
			out = append(out, h.frame)
			waiting[root] = true // the one just announced makes it busy
		default:
			waiting[root] = true
			g.armLocked(g.notBefore[root], now)
			kept = append(kept, h)
		}
	}
	clear(g.held[len(kept):])
	g.held = kept
	return out
}

// freeLocked reports whether a question of tree root may be announced
// now: none of its questions is announced, none of its permissions
// pending (nor one of a tree not known yet), and its last question ended
// QuestionSpacing ago or more.
func (g *Gate) freeLocked(root string, now time.Time) bool {
	if now.Before(g.notBefore[root]) {
		return false
	}
	for _, session := range g.busy {
		if r, known := g.rootLocked(session); !known || r == root {
			return false
		}
	}
	return true
}

// unplacedLocked reports whether a held question's tree is not known yet.
func (g *Gate) unplacedLocked() bool {
	for _, h := range g.held {
		if _, known := g.rootOf[h.session]; !known {
			return true
		}
	}
	return false
}

// holdsLocked reports whether a question of tree root is held.
func (g *Gate) holdsLocked(root string) bool {
	for _, h := range g.held {
		if r, known := g.rootOf[h.session]; known && r == root {
			return true
		}
	}
	return false
}

// rootLocked is session's root if known; if not, it starts finding it
// (again, when the memo was cleared).
func (g *Gate) rootLocked(session string) (root string, known bool) {
	if root, known = g.rootOf[session]; known || g.resolving[session] || g.stopped {
		return root, known
	}
	g.resolving[session] = true
	g.work.Add(1)
	go g.resolve(session)
	return "", false
}

// resolve asks Roots for session's root, then wakes the stream to release
// what waited for it. A server that cannot say leaves the session ungated:
// the stream ends soon anyway when the server is gone.
func (g *Gate) resolve(session string) {
	defer g.work.Done()
	root, ok, err := g.roots.Root(g.ctx, session)
	if !ok || err != nil {
		root = ""
	}
	g.mu.Lock()
	delete(g.resolving, session)
	if g.stopped {
		g.mu.Unlock()
		return
	}
	if len(g.rootOf) >= maxRootsMemo {
		clear(g.rootOf)
	}
	g.rootOf[session] = root
	g.mu.Unlock()
	g.wake()
}

// armLocked makes sure the stream is woken at at, if that is still to
// come.
func (g *Gate) armLocked(at, now time.Time) {
	if g.stopped || !at.After(now) || g.timer != nil && !g.timerAt.After(at) {
		return
	}
	if g.timer != nil {
		g.timer.Stop()
	}
	g.timerAt = at
	g.timer = time.AfterFunc(at.Sub(now), g.fire)
}

func (g *Gate) fire() {
	g.mu.Lock()
	g.timer = nil
	stopped := g.stopped
	g.mu.Unlock()
	if !stopped {
		g.wake()
	}
}

// Stop implements sse.Filter.
func (g *Gate) Stop() {
	g.mu.Lock()
	g.stopped = true
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	g.held = nil
	g.mu.Unlock()
	g.cancel()
	g.work.Wait()
}
