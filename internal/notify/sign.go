package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// Request headers of every delivery.
const (
	HeaderEvent     = "X-Questiond-Event"     // question.asked or question.ended
	HeaderEventID   = "X-Questiond-Event-Id"  // the same on every retry: receivers deduplicate by it
	HeaderTimestamp = "X-Questiond-Timestamp" // unix seconds of this attempt, signed
	HeaderSignature = "X-Questiond-Signature" // "v1=" + hex HMAC-SHA256 of "<timestamp>.<body>"
)

// Sign returns the X-Questiond-Signature value of body sent at timestamp
// (unix seconds) with secret.
func Sign(secret []byte, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(strconv.FormatInt(timestamp, 10)))
	mac.Write([]byte("."))
	mac.Write(body)
	return "v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Verify is what a receiver does: it accepts body only if signature is
// Sign's for timestamp (the X-Questiond-Timestamp header, as sent) and the
// timestamp is within tolerance of now, so a recorded delivery cannot be
// replayed later.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) bool {
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if age := now.Sub(time.Unix(ts, 0)); age > tolerance || age < -tolerance {
		return false
	}
	return hmac.Equal([]byte(signature), []byte(Sign(secret, ts, body)))
}
