package pgstore

// ReadSQL is the tailer's read, for tests of its plan.
const ReadSQL = readSQL
