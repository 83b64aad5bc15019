package mcpserver

// quota counts what agents hold of one resource, in total and per agent.
// It does no locking: its owner holds a lock around every call.
type quota struct {
	held    int
	byAgent map[string]int // agents holding some; "" (no agent tokens) is never counted
}

// quotaFull says which cap a take would pass.
type quotaFull int

const (
	quotaFits quotaFull = iota
	quotaTotal
	quotaAgent
)

// fits reports whether agent may take one more with at most max in total
// and perAgent each (zero: no limit). The anonymous agent ("") has no cap
// of its own: it is every agent at once.
func (q *quota) fits(agent string, max, perAgent int) quotaFull {
	switch {
	case max > 0 && q.held >= max:
		return quotaTotal
	case perAgent > 0 && agent != "" && q.byAgent[agent] >= perAgent:
		return quotaAgent
	}
	return quotaFits
}

func (q *quota) take(agent string) {
	q.held++
	if agent != "" {
		if q.byAgent == nil {
			q.byAgent = make(map[string]int)
		}
		q.byAgent[agent]++
	}
}

func (q *quota) give(agent string) {
	q.held--
	if agent != "" {
		if q.byAgent[agent]--; q.byAgent[agent] <= 0 {
			delete(q.byAgent, agent)
		}
	}
}
