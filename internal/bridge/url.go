package bridge

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/questiond/questiond/client"
)

// URL-mode elicitation (MCP 2025-11-25): the server asks the user to open a
// URL (to sign in, to pay) and does the rest out of band. Accept means
// consent to open it, not that the work is done. The operator gets a
// question that shows the URL as text, never fetched, with the choices Open
// and Decline; the server's notifications/elicitation/complete ends it.

// urlChoice is the one property of a URL question; its values are its
// answers.
const (
	urlChoice  = "choice"
	urlOpen    = "open"
	urlDecline = "decline"
)

// urlSchema offers Open and Decline.
var urlSchema = json.RawMessage(`{"type":"object","properties":{"` + urlChoice + `":{"type":"string","title":"Open the link?",` +
	`"description":"Open tells the server you will open the link yourself; questiond does not open or fetch it.",` +
	`"oneOf":[{"const":"` + urlOpen + `","title":"Open"},{"const":"` + urlDecline + `","title":"Decline"}]}},"required":["` + urlChoice + `"]}`)

// urlAsk is a URL-mode elicitation being asked: its ask's key and the
// upstream's request id.
type urlAsk struct {
	key any
	id  jsonrpc.ID
}

// urlQuestion is the question for a URL-mode elicitation.
func (r *Relay) urlQuestion(a asked, p elicitParams) (asked, error) {
	if p.ElicitationID == "" {
		return asked{}, invalidParams("URL-mode elicitation without an elicitationId")
	}
	u, err := url.Parse(p.URL)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return asked{}, invalidParams("URL-mode elicitation without an absolute url")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return asked{}, invalidParams("URL-mode elicitation with a " + u.Scheme + ": url: only https and http are shown to operators")
	}
	a.params.Message = strings.TrimSpace(p.Message) + "\n\nThe server asks you to open this link:\n" + p.URL +
		"\n(host: " + u.Host + ")"
	a.params.RequestedSchema = urlSchema
	a.elicitationID = p.ElicitationID
	return a, nil
}

// urlResult is the ElicitResult of a URL question: accept (consent to
// open) without content, decline, or cancel.
func urlResult(res *client.Result) json.RawMessage {
	action := res.Action
	if action == client.ActionAccept {
		if choice, _ := res.Content[urlChoice].(string); choice == urlDecline {
			action = client.ActionDecline
		}
	}
	out, _ := json.Marshal(map[string]string{"action": action})
	return out
}

// completed ends the question of the URL-mode elicitation a
// notifications/elicitation/complete names, if the relay is asking it,
// and answers the upstream accept: the work it asked for is done. It
// reports whether the notification was about one of the relay's questions.
func (r *Relay) completed(ctx context.Context, params json.RawMessage) bool {
	var p struct {
		ElicitationID string `json:"elicitationId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ElicitationID == "" {
		return false
	}
	r.mu.Lock()
	ua, ok := r.urls[p.ElicitationID]
	delete(r.urls, p.ElicitationID)
	done, awaited := r.awaiting[p.ElicitationID]
	delete(r.awaiting, p.ElicitationID)
	r.mu.Unlock()
	if awaited {
		close(done) // a URLElicitationRequiredError's: its call goes again
		return true
	}
	if !ok {
		return false
	}
	if r.withdraw(ua.key) {
		r.respondUpstream(ctx, ua.id, json.RawMessage(`{"action":"accept"}`), nil)
	}
	return true
}
