package ident

import (
	"regexp"
	"sort"
	"testing"
	"time"
)

var shape = regexp.MustCompile(`^que_[0-9a-f]{12}[0-9A-Za-z]{14}$`)

func TestAscendingShapeAndOrder(t *testing.T) {
	var g Generator
	ids := make([]string, 10000) // forces the per-millisecond counter to overflow
	for i := range ids {
		ids[i] = g.Ascending(Question)
		if !shape.MatchString(ids[i]) {
			t.Fatalf("id %q does not have OpenCode's shape", ids[i])
		}
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ascending ids are not sorted in creation order")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id[:16]] {
			t.Fatalf("time-and-counter part repeated: %s", id)
		}
		seen[id[:16]] = true
	}
}

func TestDescendingSortsNewestFirst(t *testing.T) {
	var g Generator
	a, b := g.Descending(Session), g.Descending(Session)
	if !(b < a) {
		t.Fatalf("descending ids out of order: %s then %s", a, b)
	}
}

func TestMatchesRecordedOpenCodeValue(t *testing.T) {
	// que_2290d9f660010JHxtaPXkLI85Z was made at some ms with counter 1; the
	// first 12 hex digits are (ms*4096+1) mod 2^48.
	ms := int64(0x2290d9f66001-1) / 4096
	g := Generator{now: func() time.Time { return time.UnixMilli(ms) }}
	// ms*4096 overflows 48 bits in real life; reproduce only the low bits.
	if got := g.Ascending(Question)[:16]; got != "que_2290d9f66001" {
		t.Fatalf("got %s, want que_2290d9f66001", got)
	}
}

func TestHasPrefix(t *testing.T) {
	for id, want := range map[string]bool{"que_x": true, "que": false, "quex": false, "ses_1": false} {
		if got := HasPrefix(id, Question); got != want {
			t.Errorf("HasPrefix(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestDerivedIsStableAndShaped(t *testing.T) {
	sessionShape := regexp.MustCompile(`^ses_[0-9a-f]{12}[0-9A-Za-z]{14}$`)
	a, again, b := Derived(Session, "inbox\x00alpha"), Derived(Session, "inbox\x00alpha"), Derived(Session, "inbox\x00beta")
	if !sessionShape.MatchString(a) || !sessionShape.MatchString(b) {
		t.Fatalf("ids %q, %q do not have OpenCode's shape", a, b)
	}
	if a != again {
		t.Errorf("the same name gave %q and %q", a, again)
	}
	if a == b {
		t.Errorf("two names gave the same id %q", a)
	}
	// Pinned (SHA-256("") starts e3b0c44298fc 1c14…: 0x1c is 28, "S"):
	// replicas and restarts of every version must agree on it.
	if got := Derived(Session, ""); got != "ses_e3b0c44298fcSKU3wETnzado3g" {
		t.Errorf("Derived(ses, \"\") = %q, which changed", got)
	}
}

// questiond knows its own ids by their tag, whichever process made them;
// ids of the same shape made otherwise (another OpenCode server's, a
// changed character, Derived ones) are not its.
func TestIssuedKnowsQuestiondsIDs(t *testing.T) {
	var g, other Generator
	for range 1000 {
		for _, id := range []string{g.Ascending(Question), other.Descending(Session)} {
			if !Issued(id) {
				t.Fatalf("Issued(%s) = false", id)
			}
		}
	}
	id := g.Ascending(Question)
	for i := len("que_"); i < len(id); i++ {
		changed := []byte(id)
		changed[i] = "01"[boolIndex(changed[i] == '0')]
		if Issued(string(changed)) {
			t.Errorf("%s, %s with byte %d changed, passes as issued", changed, id, i)
		}
	}
	opencode := []string{"que_2293ecb0c001wcsvcRc0Za0QXr", "ses_dd6c15ce1ffeeAKnUvWtxecA38", "que_", "", Derived(Session, "x")}
	for _, id := range opencode {
		if Issued(id) {
			t.Errorf("Issued(%q) = true", id)
		}
	}
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// FuzzIssued checks that Issued takes any string without panicking, and
// that a tagged id keeps its tag only as it was made.
func FuzzIssued(f *testing.F) {
	f.Add(Ascending(Question))
	f.Add("que_2293ecb0c001wcsvcRc0Za0QXr")
	f.Add("")
	f.Fuzz(func(t *testing.T, id string) {
		if Issued(id) && len(id) < 1+12+randomChars+tagChars {
			t.Fatalf("Issued(%q): too short to carry a tag", id)
		}
	})
}
