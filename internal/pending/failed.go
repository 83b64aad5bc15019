package pending

import "errors"

// FailedStore names the store whose failure err is ("PostgreSQL"), from an
// error in its chain with a FailedStore method, or "" when none says.
// Answers to callers name it, so that "unavailable" says what to look at.
func FailedStore(err error) string {
	var named interface{ FailedStore() string }
	if errors.As(err, &named) {
		return named.FailedStore()
	}
	return ""
}
