package pgstore

// ReadSQL is the tailer's read, for tests of its plan.
const ReadSQL = readSQL

// StopNotifier stops the goroutine that sends the notifications of
// transactions of several changes and of failures; Close stops it too.
func (s *DB) StopNotifier() {
	s.stopNotify()
	<-s.notifyDone
}

// OwnNoted counts the changes of this replica its tailer has not applied
// yet, as the journal notes them.
func (j *Journal) OwnNoted() int {
	n := 0
	j.own.Range(func(any, any) bool { n++; return true })
	return n
}
