package bridge

import (
	"encoding/json"
	"fmt"
)

// host is what the host said of itself in initialize.
type host struct {
	name string // clientInfo.name
	// elicits says the host declared elicitation (form mode: "{}" or
	// "form"), so Options.PreferHost can hand elicitations to it.
	elicits bool
}

// declareElicitation rewrites the host's initialize params for the
// upstream: the host's capabilities plus form-mode elicitation, which the
// relay answers, and without client-side elicitation tasks
// (capabilities.tasks.requests.elicitation), which it does not. Everything
// else goes as the host sent it.
func declareElicitation(params json.RawMessage) (json.RawMessage, host, error) {
	var p map[string]json.RawMessage
	if err := json.Unmarshal(params, &p); err != nil || p == nil {
		return nil, host{}, fmt.Errorf("initialize params are not an object")
	}
	var h host
	var info struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(p["clientInfo"], &info) == nil {
		h.name = info.Name
	}
	caps := map[string]json.RawMessage{}
	if raw, ok := p["capabilities"]; ok {
		if err := json.Unmarshal(raw, &caps); err != nil || caps == nil {
			return nil, host{}, fmt.Errorf("initialize capabilities are not an object")
		}
	}
	if raw, ok := caps["elicitation"]; ok {
		var modes map[string]json.RawMessage
		if json.Unmarshal(raw, &modes) == nil {
			_, form := modes["form"]
			_, url := modes["url"]
			h.elicits = form || !url // {} means form
		}
	}
	caps["elicitation"] = json.RawMessage(`{"form":{},"url":{}}`)
	if raw, ok := caps["tasks"]; ok {
		if trimmed, err := withoutTaskElicitation(raw); err == nil {
			caps["tasks"] = trimmed
		}
	}
	var err error
	if p["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, host{}, err
	}
	out, err := json.Marshal(p)
	return out, h, err
}

// withoutTaskElicitation drops requests.elicitation from a tasks
// capability.
func withoutTaskElicitation(raw json.RawMessage) (json.RawMessage, error) {
	var tasks map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tasks); err != nil || tasks == nil {
		return raw, fmt.Errorf("tasks capability is not an object")
	}
	var requests map[string]json.RawMessage
	if err := json.Unmarshal(tasks["requests"], &requests); err != nil || requests == nil {
		return raw, nil
	}
	delete(requests, "elicitation")
	var err error
	if tasks["requests"], err = json.Marshal(requests); err != nil {
		return raw, err
	}
	return json.Marshal(tasks)
}
