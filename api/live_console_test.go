package api_test

import (
	"net/http"
	"strings"
	"testing"
)

// promptBody is what the OpenCode TUI sends when the operator types.
const promptBody = `{"agent":"questiond","model":{"providerID":"questiond","modelID":"operator-console"},"parts":[{"type":"text","text":"hello"}]}`

// refusedOperations are documented with their refusal only: questiond runs
// no agent, so a typed prompt never succeeds.
var refusedOperations = map[string]bool{"session.create": true, "session.prompt": true}

// exerciseConsole calls every console route: the constants, then a session
// with a pending question and an answered one, its history, the queries the
// TUI sends, an unknown session and the refused prompts. events sees the
// question asked and replied.
func exerciseConsole(t *testing.T, l *liveServer, events *liveStream) {
	t.Helper()
	for _, path := range []string{"/config", "/config/providers", "/provider", "/agent"} {
		l.do(t, exchange{method: "GET", path: path}, 200)
	}
	// The TUI's GET /mcp, OpenCode's MCP status: an operator's, with the
	// operator's credentials (none where they need none).
	mcpStatus := exchange{method: "GET", path: "/mcp", header: []string{"Accept", "application/json"}}
	if l.operatorAuth != "" {
		mcpStatus.header = append(mcpStatus.header, "Authorization", l.operatorAuth)
	} else {
		mcpStatus.anonymous = true
	}
	if got := l.do(t, mcpStatus, 200); string(got.body) != "{}" {
		t.Errorf("GET /mcp as the TUI sends it: %s, want {}", got.body)
	}
	if l.agentAuth != "" { // an agent's plain GET is an MCP request without a session
		l.do(t, exchange{method: "GET", path: "/mcp", header: []string{"Accept", "application/json"}}, 400)
	}

	// The OpenCode TUI's own stream: everything it gets is documented too.
	console := l.open(t, "/global/event", "User-Agent", "opencode/1.18.33")
	console.next(t, "server.connected")

	inSession := strings.Replace(deployBody, `{"message"`, `{"sessionID":"ses_console","directory":"/console","message"`, 1)
	var first, second struct{ ID string }
	l.do(t, exchange{method: "POST", path: "/elicitations", body: inSession}, 201).decode(t, &first)
	events.next(t, "question.asked")
	l.do(t, exchange{method: "POST", path: "/elicitations", body: inSession}, 201).decode(t, &second)
	events.next(t, "question.asked")
	l.do(t, exchange{method: "POST", path: "/question/" + first.ID + "/reply", body: goodAnswers}, 200)
	events.next(t, "question.replied")

	var sessions []struct{ ID, Title string }
	l.do(t, exchange{method: "GET", path: "/session?roots=true&limit=100&path="}, 200).decode(t, &sessions)
	if len(sessions) == 0 || sessions[0].ID != "ses_console" || !strings.HasPrefix(sessions[0].Title, "[?] ") {
		t.Errorf("GET /session: %+v, want ses_console first, pending", sessions)
	}
	l.do(t, exchange{method: "GET", path: "/session?start=0&search=DEPLOY"}, 200)
	l.do(t, exchange{method: "GET", path: "/session?limit=0", brokenRequest: true}, 400)
	var status map[string]struct{ Type string }
	l.do(t, exchange{method: "GET", path: "/session/status"}, 200).decode(t, &status)
	if status["ses_console"].Type != "busy" {
		t.Errorf("GET /session/status: %v, want ses_console busy", status)
	}
	l.do(t, exchange{method: "GET", path: "/session/ses_console"}, 200)
	l.do(t, exchange{method: "GET", path: "/session/ses_unknown"}, 404)
	var history []struct {
		Parts []struct {
			Type  string
			State struct{ Status string }
		}
	}
	l.do(t, exchange{method: "GET", path: "/session/ses_console/message?limit=100"}, 200).decode(t, &history)
	if len(history) != 2 || history[0].Parts[len(history[0].Parts)-1].State.Status != "completed" ||
		history[1].Parts[len(history[1].Parts)-1].State.Status != "running" {
		t.Errorf("history of ses_console: %+v, want completed then running", history)
	}
	l.do(t, exchange{method: "GET", path: "/session/ses_unknown/message"}, 404)
	l.do(t, exchange{method: "GET", path: "/session/ses_console/message?limit=x", brokenRequest: true}, 400)

	l.do(t, exchange{method: "POST", path: "/session", body: promptBody}, http.StatusBadRequest)
	l.do(t, exchange{method: "POST", path: "/session/ses_console/message", body: promptBody}, http.StatusBadRequest)

	l.do(t, exchange{method: "POST", path: "/question/" + second.ID + "/reject"}, 200)
	events.next(t, "question.rejected")
	for _, typ := range []string{"question.asked", "message.updated", "message.part.updated", "session.updated",
		"session.status", "tui.toast.show", "question.replied", "question.rejected", "session.idle"} {
		console.next(t, typ)
	}
}
