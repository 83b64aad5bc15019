package console

import (
	"net/http"

	"github.com/questiond/questiond/internal/elicit"
	"github.com/questiond/questiond/internal/httpapi/wire"
)

// The shapes the OpenCode TUI reads when it attaches to questiond as its
// operator console (opencode attach URL). Field names and nesting are
// OpenCode's; only what the TUI reads, plus what OpenCode always sends, is here.

// Names the console shows for questiond in the TUI's provider, model and
// agent pickers, so nobody mistakes it for a model that runs prompts.
const (
	consoleProviderID = "questiond"
	consoleModelID    = "operator-console"
	consoleAgent      = "questiond"
	consoleProjectID  = "global"
)

// errConsolePrompt refuses what the TUI sends when the operator types a
// prompt; the TUI shows data.message in a toast.
var errConsolePrompt = wire.NewStatus(http.StatusBadRequest, "BadRequest", "this console answers agents' questions; it does not run an agent")

type consoleCost struct {
	Input  float64            `json:"input"`
	Output float64            `json:"output"`
	Cache  consoleCacheTokens `json:"cache"`
}

type consoleCacheTokens struct {
	Read  int `json:"read"`
	Write int `json:"write"`
}

type consoleModel struct {
	ID           string              `json:"id"`
	ProviderID   string              `json:"providerID"`
	API          consoleModelAPI     `json:"api"`
	Name         string              `json:"name"`
	Family       string              `json:"family"`
	Capabilities consoleCapabilities `json:"capabilities"`
	Cost         consoleCost         `json:"cost"`
	Limit        consoleLimit        `json:"limit"`
	Status       string              `json:"status"`
	Options      struct{}            `json:"options"`
	Headers      struct{}            `json:"headers"`
	ReleaseDate  string              `json:"release_date"`
	Variants     struct{}            `json:"variants"`
}

type consoleModelAPI struct {
	ID  string `json:"id"`
	URL string `json:"url"`
	NPM string `json:"npm"`
}

type consoleModalities struct {
	Text  bool `json:"text"`
	Audio bool `json:"audio"`
	Image bool `json:"image"`
	Video bool `json:"video"`
	PDF   bool `json:"pdf"`
}

type consoleCapabilities struct {
	Temperature bool              `json:"temperature"`
	Reasoning   bool              `json:"reasoning"`
	Attachment  bool              `json:"attachment"`
	Toolcall    bool              `json:"toolcall"`
	Input       consoleModalities `json:"input"`
	Output      consoleModalities `json:"output"`
	Interleaved bool              `json:"interleaved"`
}

type consoleLimit struct {
	Context int `json:"context"`
	Output  int `json:"output"`
}

type consoleProvider struct {
	ID      string                  `json:"id"`
	Name    string                  `json:"name"`
	Source  string                  `json:"source"`
	Env     []string                `json:"env"`
	Options struct{}                `json:"options"`
	Models  map[string]consoleModel `json:"models"`
}

// consoleProviders is the one provider and model the TUI needs to start
// without its "Connect a provider" dialog.
func consoleProviders() []consoleProvider {
	text := consoleModalities{Text: true}
	return []consoleProvider{{
		ID: consoleProviderID, Name: "questiond", Source: "config", Env: []string{},
		Models: map[string]consoleModel{consoleModelID: {
			ID: consoleModelID, ProviderID: consoleProviderID,
			API:          consoleModelAPI{ID: consoleModelID},
			Name:         "questiond operator console",
			Capabilities: consoleCapabilities{Input: text, Output: text},
			Limit:        consoleLimit{Context: 1, Output: 1},
			Status:       "active",
		}},
	}}
}

func consoleDefaultModel() map[string]string {
	return map[string]string{consoleProviderID: consoleModelID}
}

// consoleAgentInfo is the one primary agent: without it the TUI drops typed
// prompts silently instead of sending them to be refused.
type consoleAgentInfo struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Mode        string   `json:"mode"`
	Native      bool     `json:"native"`
	Hidden      bool     `json:"hidden"`
	Permission  []string `json:"permission"`
	Options     struct{} `json:"options"`
}

// sessionInfo is OpenCode's Session.
type sessionInfo struct {
	ID        string      `json:"id"`
	Slug      string      `json:"slug"`
	ProjectID string      `json:"projectID"`
	Directory string      `json:"directory"`
	Path      string      `json:"path"`
	Title     string      `json:"title"`
	Version   string      `json:"version"`
	Time      sessionTime `json:"time"`
}

type sessionTime struct {
	Created int64 `json:"created"`
	Updated int64 `json:"updated"`
}

type sessionStatus struct {
	Type string `json:"type"`
}

// consoleMessage is OpenCode's message with its parts.
type consoleMessage struct {
	Info  assistantMessage `json:"info"`
	Parts []any            `json:"parts"`
}

type assistantMessage struct {
	ID         string        `json:"id"`
	SessionID  string        `json:"sessionID"`
	Role       string        `json:"role"`
	Time       messageTime   `json:"time"`
	ParentID   string        `json:"parentID"`
	ModelID    string        `json:"modelID"`
	ProviderID string        `json:"providerID"`
	Mode       string        `json:"mode"`
	Agent      string        `json:"agent"`
	Path       messagePath   `json:"path"`
	Cost       float64       `json:"cost"`
	Tokens     messageTokens `json:"tokens"`
	Finish     string        `json:"finish,omitempty"`
}

type messageTime struct {
	Created   int64  `json:"created"`
	Completed *int64 `json:"completed,omitempty"`
}

type messagePath struct {
	Cwd  string `json:"cwd"`
	Root string `json:"root"`
}

type messageTokens struct {
	Input     int                `json:"input"`
	Output    int                `json:"output"`
	Reasoning int                `json:"reasoning"`
	Cache     consoleCacheTokens `json:"cache"`
}

type textPart struct {
	ID        string `json:"id"`
	SessionID string `json:"sessionID"`
	MessageID string `json:"messageID"`
	Type      string `json:"type"`
	Text      string `json:"text"`
}

type toolPart struct {
	ID        string    `json:"id"`
	SessionID string    `json:"sessionID"`
	MessageID string    `json:"messageID"`
	Type      string    `json:"type"`
	CallID    string    `json:"callID"`
	Tool      string    `json:"tool"`
	State     toolState `json:"state"`
}

// toolState is OpenCode's ToolState for its question tool: running while the
// question is pending, completed with the answers, or error when it ended
// without them.
type toolState struct {
	Status   string         `json:"status"`
	Input    toolInput      `json:"input"`
	Output   string         `json:"output,omitempty"`
	Title    string         `json:"title,omitempty"`
	Metadata *toolMetadata  `json:"metadata,omitempty"`
	Error    string         `json:"error,omitempty"`
	Time     toolStateTimes `json:"time"`
}

type toolInput struct {
	Questions []elicit.QuestionInfo `json:"questions"`
}

type toolMetadata struct {
	Answers   [][]string `json:"answers"`
	Truncated bool       `json:"truncated"`
}

type toolStateTimes struct {
	Start int64  `json:"start"`
	End   *int64 `json:"end,omitempty"`
}
