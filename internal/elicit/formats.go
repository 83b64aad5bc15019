package elicit

import (
	"net/mail"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// formatProblem checks s against one of the four formats of the subset.
// The SDKs do not assert formats; we do, so an agent never receives a
// "date" it cannot parse.
func formatProblem(format, s string) string {
	var ok bool
	var want string
	switch format {
	case "email":
		ok, want = isEmail(s), "an email address (name@example.com)"
	case "uri":
		ok, want = isAbsoluteURI(s), "an absolute URI with a scheme (https://example.com/…)"
	case "date":
		ok, want = isDate(s), "a date (YYYY-MM-DD)"
	case "date-time":
		ok, want = isDateTime(s), "an RFC 3339 date-time (2006-01-02T15:04:05Z)"
	default:
		return "unknown format " + quote(format)
	}
	if ok {
		return ""
	}
	return quote(s) + " is not " + want
}

// isEmail accepts a bare RFC 5322 addr-spec: no display name, no angle
// brackets, no comments.
func isEmail(s string) bool {
	addr, err := mail.ParseAddress(s)
	return err == nil && addr.Name == "" && addr.Address == s
}

// isAbsoluteURI accepts an RFC 3986 URI with a scheme: only the characters
// RFC 3986 allows (so no spaces and no raw non-ASCII), valid %-escapes.
func isAbsoluteURI(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isURIChar(s[i]) {
			return false
		}
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}

func isURIChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("-._~:/?#[]@!$&'()*+,;=%", c) >= 0
}

var (
	dateShape     = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	dateTimeShape = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-]([0-9]{2}):([0-9]{2}))$`)
)

// isDate accepts YYYY-MM-DD naming a day that exists.
func isDate(s string) bool {
	if !dateShape.MatchString(s) {
		return false
	}
	_, err := time.Parse(time.DateOnly, s)
	return err == nil
}

// isDateTime accepts RFC 3339 date-times ("T" and "Z" in either case, as
// RFC 3339 allows). A leap second (:60) is refused, as Go's time package
// does.
func isDateTime(s string) bool {
	m := dateTimeShape.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	if m[3] != "" && (m[3] > "23" || m[4] > "59") { // offset hours and minutes
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	return err == nil
}
