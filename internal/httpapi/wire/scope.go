package wire

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode"
)

// maxDirectoryBytes bounds a directory name; paths longer than Linux's
// PATH_MAX are not real directories.
const maxDirectoryBytes = 4096

// RequestDirectory is the directory an operator request is scoped to, the way
// OpenCode clients send it: the "directory" query parameter, or else the
// percent-encoded x-opencode-directory header. "" means every directory.
func RequestDirectory(r *http.Request) (string, error) {
	if err := checkQueryEncoding(r.URL.RawQuery, "directory"); err != nil {
		return "", err
	}
	if dir := r.URL.Query().Get("directory"); dir != "" {
		d, err := NormalizeDirectory(dir)
		if err != nil {
			return "", NewBadRequest(KindQuery, "%s\n  at [\"directory\"]", err.Error())
		}
		return d, nil
	}
	header := r.Header.Get("x-opencode-directory")
	if header == "" {
		return "", nil
	}
	dir, err := url.PathUnescape(header)
	if err != nil {
		return "", NewBadRequest(KindHeaders, "x-opencode-directory is not percent-encoded: %v", err)
	}
	d, err := NormalizeDirectory(dir)
	if err != nil {
		return "", NewBadRequest(KindHeaders, "%s\n  at [\"x-opencode-directory\"]", err.Error())
	}
	return d, nil
}

// NormalizeDirectory makes equal directories compare equal ("/a/b/" is
// "/a/b") and refuses names no file system has.
func NormalizeDirectory(dir string) (string, error) {
	if len(dir) > maxDirectoryBytes {
		return "", fmt.Errorf("directory is longer than %d bytes", maxDirectoryBytes)
	}
	if strings.ContainsFunc(dir, unicode.IsControl) {
		return "", fmt.Errorf("directory contains control characters")
	}
	for len(dir) > 1 && strings.HasSuffix(dir, "/") {
		dir = strings.TrimSuffix(dir, "/")
	}
	return dir, nil
}

// checkQueryEncoding refuses a query parameter named key whose value is not
// percent-encoded: url.Values drops such a pair without a word, which would
// turn a scoped request (?directory=%ZZ) into one for every directory.
func checkQueryEncoding(rawQuery, key string) error {
	for pair := range strings.SplitSeq(rawQuery, "&") {
		name, value, _ := strings.Cut(pair, "=")
		if n, err := url.QueryUnescape(name); err != nil || n != key {
			continue
		}
		if _, err := url.QueryUnescape(value); err != nil {
			return NewBadRequest(KindQuery, "%s is not percent-encoded: %v\n  at [%q]", key, err, key)
		}
	}
	return nil
}
