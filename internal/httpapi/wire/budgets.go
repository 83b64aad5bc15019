package wire

import (
	"fmt"
	"net/http"

	"github.com/questiond/questiond/internal/pending"
)

// The byte budgets themselves are the store's (pending.Options.MaxBytes,
// MaxBytesPerAgent): it counts every question it holds, pending or with its
// result retained, and refuses a creation beyond either with a
// *pending.BudgetError once the asking agent's own oldest results are
// forgotten. Here that refusal becomes a 429 naming the budget and the flag
// that sets it.

// budgetRefusal is the 429 for a creation refused by a byte budget.
func budgetRefusal(b *pending.BudgetError) *StatusError {
	if b.Budget == pending.BudgetAgent {
		return NewStatus(http.StatusTooManyRequests, "TooManyRequests", fmt.Sprintf(
			"agent %q holds %d bytes of pending questions and results, and this one (%d bytes) would pass its byte budget of %d (--max-bytes-per-agent) even once its results are forgotten; try again once some are answered, or ask with less text",
			b.Agent, b.Held, b.Need, b.Limit))
	}
	return NewStatus(http.StatusTooManyRequests, "TooManyRequests", fmt.Sprintf(
		"questiond holds %d bytes of questions and results, and this one (%d bytes) would pass its byte budget of %d (--max-bytes) even once the agent's own results are forgotten; try again once some are answered",
		b.Held, b.Need, b.Limit))
}
