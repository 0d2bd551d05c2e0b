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
	// ErrSchemaMismatch: the store or the snapshot holds a table of that
	// name written with another codec or for another object type than the
	// table's binding (Table) names, and the codec's version did not go up
	// to migrate it. The error says what is stored and what is bound now.
	ErrSchemaMismatch = errors.New("stored table has another codec or object type")
	// ErrKeyChanged: a stored object's primary key, computed with the
	// table's primary index as it is now, is not the key it is stored
	// under: the primary index changed since the object was written.
	// Register with the Rekey option to rewrite the stored keys.
	ErrKeyChanged = errors.New("stored object's primary key changed")
	// ErrNotLoaded: a commit wrote a table whose registration has not
	// succeeded: it is loading, or it failed (then the error wraps why).
	// Nothing was written or published. Register the table again (or fix
	// the cause) before writing to it. Store.LoadError returns it too.
	ErrNotLoaded = errors.New("table is registered with the store but not loaded")
	// ErrForeignTable: a table was given with a database it does not
	// belong to (Register's db argument).
	ErrForeignTable = errors.New("table belongs to another database")
	// ErrTableUnknown: Drop or Rename named a table the store does not
	// hold.
	ErrTableUnknown = errors.New("no such table in the store")
	// ErrNoStore: OpenReader was given a directory that does not exist or
	// holds no store.
	ErrNoStore = errors.New("no store in the directory")
	// ErrTableExists: Rename's new name is taken by a table the store
	// holds.
	ErrTableExists = errors.New("a table of that name exists in the store")
)
