package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/questiond/questiond/internal/httpapi"
)

// A directory that is not percent-encoded is a 400 naming it, on the query
// as on the header: it is never dropped, which would widen the request's
// scope to every directory.
func TestMalformedDirectoryQueryIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, httpapi.Options{})
	for _, path := range []string{"/event?directory=%ZZ", "/event?x=1&directory=%ZZ", "/question?directory=%ZZ", "/session?directory=%"} {
		res := h.do(http.MethodGet, path, nil)
		wantStatusError(t, "GET "+path, res, http.StatusBadRequest, "BadRequest")
		if !strings.Contains(string(res.Body), `directory`) {
			t.Errorf("GET %s: %s does not name the directory", path, res.Body)
		}
	}
	if res := h.do(http.MethodGet, "/question?directory=%2Fwork%2Fa", nil); res.Status != http.StatusOK {
		t.Errorf("an encoded directory: %d %s", res.Status, res.Body)
	}
}
