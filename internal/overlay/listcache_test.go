package overlay

import (
	"fmt"
	"testing"
)

// A list is used only while the server's stream is heard and no change
// was heard since it was fetched; what is kept stays bounded.
func TestQuestionListsAreUsedOnlyWhileNothingChanged(t *testing.T) {
	var l questionLists
	list := []byte(`[]`)
	l.put("a", l.version.Load(), list)
	if _, ok := l.get("a"); ok {
		t.Fatal("a list fetched while the stream was not heard was used")
	}
	l.watching(true)
	l.put("a", l.version.Load(), list)
	if got, ok := l.get("a"); !ok || string(got) != "[]" {
		t.Fatalf("get = %q, %v; want the list kept", got, ok)
	}
	before := l.version.Load()
	l.heard("message.part.updated")
	if _, ok := l.get("a"); !ok {
		t.Fatal("an event that changes no question made the list stale")
	}
	for _, typ := range []string{"question.asked", "question.replied", "question.rejected", "server.instance.disposed", "global.disposed", "session.deleted"} {
		l.put("a", l.version.Load(), list)
		l.heard(typ)
		if _, ok := l.get("a"); ok {
			t.Fatalf("the list outlived %s", typ)
		}
	}
	l.put("a", before, list) // fetched before a change: never kept
	if _, ok := l.get("a"); ok {
		t.Fatal("a list fetched before a change was kept")
	}
	l.put("a", l.version.Load(), list)
	l.watching(false)
	l.watching(true)
	if _, ok := l.get("a"); ok {
		t.Fatal("a list outlived a lost stream")
	}
	for i := range 3 * maxCachedLists {
		l.put(fmt.Sprint(i), l.version.Load(), list)
	}
	if n := len(l.byScope); n > maxCachedLists {
		t.Fatalf("%d lists kept, want at most %d", n, maxCachedLists)
	}
	l.put("big", l.version.Load(), make([]byte, maxCachedList+1))
	if _, ok := l.get("big"); ok {
		t.Fatal("a list over the bound was kept")
	}
}
