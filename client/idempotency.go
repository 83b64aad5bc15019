package client

import (
	"fmt"
	"net/http"

	"github.com/google/uuid"
)

// newIdempotencyKey is the header of one create and all its retries: a fresh
// UUIDv7, written as a structured-field string as the IETF draft "The
// Idempotency-Key HTTP Header Field" does. questiond answers a retry under
// the same key with the question the first attempt created.
func newIdempotencyKey() (http.Header, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("questiond: creating an elicitation: making an Idempotency-Key: %w", err)
	}
	return http.Header{"Idempotency-Key": {`"` + id.String() + `"`}}, nil
}
