package persist

import "errors"

// Errors of the store. They are returned wrapped with context (the
// directory, the table); test for them with errors.Is. ErrUnknownVersion,
// about codec versions, is declared with the codecs.
var (
	// ErrLocked: another Store, in this process or another, has the
	// directory open.
	ErrLocked = errors.New("store directory is locked by another store")
	// ErrNewerFormat: the store was written by a newer version of this
	// package, in an on-disk format this version does not know.
	ErrNewerFormat = errors.New("store written in a newer, unknown format")
	// ErrCorrupt: the store holds a key or value this package did not
	// write, or one that is damaged.
	ErrCorrupt = errors.New("store holds a malformed record")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store is closed")
	// ErrAlreadyRegistered: a table of that name was already registered
	// with the store since it was opened.
	ErrAlreadyRegistered = errors.New("table already registered with the store")
	// ErrStoreFailed: the store hit an error it cannot recover from (Pebble
	// reported it as fatal, such as a failed write or sync of its log).
	// Every later commit to a persisted table fails with it; close the
	// store and open it again (after fixing the cause) to go on.
	ErrStoreFailed = errors.New("store failed and refuses writes until reopened")
)
