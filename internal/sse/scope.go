package sse

import "fmt"

// scope is what one subscriber asked for.
type scope struct {
	global    bool
	directory string   // "" means every directory
	audience  Audience // Standard or Console
}

// accepts reports whether m belongs on this scope's stream; it is the rule
// Publish routes by, applied to initial messages.
func (s scope) accepts(m Message) bool {
	return m.Audience.reaches(s.audience) &&
		(s.global || s.directory == "" || m.Directory == "" || m.Directory == s.directory)
}

func (s scope) String() string {
	var path string
	switch {
	case s.global:
		path = "/global/event"
	case s.directory == "":
		path = "/event"
	default:
		path = "/event?directory=" + s.directory
	}
	if s.audience == Console {
		path += " (console)"
	}
	return path
}

// subscriberSet is the live subscribers of one scope.
type subscriberSet map[*subscriber]struct{}

// routes finds the subscribers a message goes to. A directory's set exists
// exactly while it has a subscriber, so MaxScopes counts live directories.
// The Broker guards it with its mutex.
type routes struct {
	global     subscriberSet            // /global/event
	undirected subscriberSet            // /event without a directory
	byDir      map[string]subscriberSet // /event?directory=…
	count      int
	consoles   int // subscribers whose audience is Console
}

func newRoutes() routes {
	return routes{global: subscriberSet{}, undirected: subscriberSet{}, byDir: map[string]subscriberSet{}}
}

// add registers s, unless its directory would be one too many.
func (r *routes) add(s *subscriber, maxScopes int) error {
	set := r.setOf(s.scope)
	if set == nil {
		if len(r.byDir) >= maxScopes {
			return fmt.Errorf("%w (limit %d)", ErrTooManyScopes, maxScopes)
		}
		set = subscriberSet{}
		r.byDir[s.scope.directory] = set
	}
	set[s] = struct{}{}
	r.count++
	if s.scope.audience == Console {
		r.consoles++
	}
	return nil
}

// remove forgets s and frees its directory's set once empty.
func (r *routes) remove(s *subscriber) {
	set := r.setOf(s.scope)
	if _, ok := set[s]; !ok {
		return
	}
	delete(set, s)
	r.count--
	if s.scope.audience == Console {
		r.consoles--
	}
	if len(set) == 0 && !s.scope.global && s.scope.directory != "" {
		delete(r.byDir, s.scope.directory)
	}
}

func (r *routes) setOf(sc scope) subscriberSet {
	switch {
	case sc.global:
		return r.global
	case sc.directory == "":
		return r.undirected
	default:
		return r.byDir[sc.directory]
	}
}

// each calls fn for every subscriber a message of directory for audience
// goes to.
func (r *routes) each(directory string, audience Audience, fn func(*subscriber)) {
	visit := func(set subscriberSet) {
		for s := range set {
			if audience.reaches(s.scope.audience) {
				fn(s)
			}
		}
	}
	visit(r.global)
	visit(r.undirected)
	if directory != "" {
		visit(r.byDir[directory])
		return
	}
	for _, set := range r.byDir {
		visit(set)
	}
}
