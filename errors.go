package strata

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata/index"
)

// Errors from table registration (NewTable). They are returned wrapped with
// the table's name; test for them with errors.Is.
var (
	// ErrInvalidTableName: a table name must match NamePattern.
	ErrInvalidTableName = errors.New("invalid table name")
	// ErrDuplicateTable: a table with the same name is already registered.
	ErrDuplicateTable = errors.New("table already registered")
	// ErrEmptyIndexName: every index needs a name.
	ErrEmptyIndexName = errors.New("empty index name")
	// ErrInvalidIndexName: an index name must match NamePattern.
	ErrInvalidIndexName = errors.New("invalid index name")
	// ErrDuplicateIndex: two indexes of one table have the same name.
	ErrDuplicateIndex = errors.New("duplicate index name")
	// ErrPrimaryIndexNotUnique: the primary index must be unique.
	ErrPrimaryIndexNotUnique = errors.New("primary index is not unique")
	// ErrPrimaryIndexLPM: an LPMIndex cannot be the primary index.
	ErrPrimaryIndexLPM = errors.New("an LPM index cannot be the primary index")
	// ErrNoFromObject: an index has no FromObject function.
	ErrNoFromObject = errors.New("index has no FromObject function")
	// ErrTooManyIndexes: a table has more than MaxSecondaryIndexes
	// secondary indexes.
	ErrTooManyIndexes = errors.New("too many secondary indexes")
)

// Errors from transactions.
var (
	// ErrTransactionClosed: the write transaction was already committed or
	// aborted.
	ErrTransactionClosed = errors.New("transaction is closed")
	// ErrTableNotLockedForWriting: the table was not passed to WriteTxn, so
	// the transaction cannot write to it.
	ErrTableNotLockedForWriting = errors.New("table not locked for writing")
)

// Errors from table writes. A write that returns one of them changes
// nothing.
var (
	// ErrPrimaryKey: the primary index yielded no key or more than one key
	// for the object. A primary index must give every object exactly one.
	ErrPrimaryKey = errors.New("primary index must yield exactly one key")
	// ErrKeyTooLong: a key of the object is longer than MaxKeyLen.
	ErrKeyTooLong = errors.New("key too long")
	// ErrUniqueConstraint: the object has a key in a unique secondary index
	// that another object already holds.
	ErrUniqueConstraint = errors.New("unique index constraint violated")
	// ErrObjectMutated: the object is the very pointer that is already
	// stored. Stored objects are immutable: copy the object, change the
	// copy and insert that.
	ErrObjectMutated = errors.New("object is the stored object itself (mutated in place?)")
	// ErrPrimaryKeyChanged: a Modify merge function returned an object
	// with a different primary key.
	ErrPrimaryKeyChanged = errors.New("merge changed the primary key")
	// ErrRevisionNotEqual: CompareAndSwap or CompareAndDelete found the
	// object at a different revision.
	ErrRevisionNotEqual = errors.New("revision not equal")
	// ErrObjectNotFound: CompareAndSwap or CompareAndDelete found no object
	// with the primary key.
	ErrObjectNotFound = errors.New("object not found")
	// ErrInvalidPrefix: an LPMIndex's FromObject gave an invalid
	// netip.Prefix (the zero Prefix, or a length out of range).
	ErrInvalidPrefix = errors.New("invalid prefix")
	// ErrPrefixHostBits: an LPMIndex's FromObject gave a prefix with host
	// bits set (10.0.0.1/8); the index keeps networks only (Masked).
	ErrPrefixHostBits = errors.New("prefix has host bits set")
)

// Errors from the persistence hooks (SetJournal, Restore).
var (
	// ErrJournalConflict: SetJournal was given a Journal other than the
	// one the database already uses.
	ErrJournalConflict = errors.New("the database already has another journal")
	// ErrTableNotEmpty: Restore needs a table without objects.
	ErrTableNotEmpty = errors.New("table is not empty")
	// ErrRestoreInput: the objects given to Restore are inconsistent: two
	// with one primary key or one revision, or a revision of 0.
	ErrRestoreInput = errors.New("inconsistent objects to restore")
	// ErrEarlierCommitFailed: the commit's record could not be made
	// durable because the record of a commit before it failed: one whose
	// state this transaction read or built on, or one enqueued in the
	// journal before it (docs/early-lock-release.md). The error wraps the
	// earlier failure too. Nothing of the commit was published.
	ErrEarlierCommitFailed = errors.New("an earlier commit failed")
	// ErrWriteOrder: ApplyWrite was given a write that cannot follow the
	// table's state: a revision not above the table's revision, a
	// deletion of an object the table does not hold, or a write of an
	// unknown kind. The replica applying it has diverged from the
	// database that made the write.
	ErrWriteOrder = errors.New("write does not follow the table's state")
)

// Errors from untyped table access (AnyTable), whose table, index and key
// names come from people and tools. They are returned wrapped with the
// table and index concerned.
var (
	// ErrTableNotFound: no table of that name is registered.
	ErrTableNotFound = errors.New("table not found")
	// ErrIndexNotFound: the table has no index of that name.
	ErrIndexNotFound = errors.New("index not found")
	// ErrNoFromString: the index takes no keys typed as text: it has no
	// FromString, and its key type no default text form (see Index).
	ErrNoFromString = errors.New("index does not parse keys from text (no FromString)")
	// ErrInvalidQuery: an AnyQuery's op is unknown, or it sets To for an
	// op other than QueryRange, or it gives an LPMIndex an address key
	// (a Containing query) with an op other than QueryList; or And, In
	// or Or was given a query of an LPMIndex.
	ErrInvalidQuery = errors.New("invalid query")
	// ErrObjectType: an object given to AnyTable is not of the table's
	// type.
	ErrObjectType = errors.New("object of the wrong type")
)

// uniqueConflict returns the ErrUniqueConstraint error of key in the unique
// index ix, which holder, another object, holds. Keys are rendered through
// their index (Index.ToString, or its default), and quoted.
func (t *table[Obj]) uniqueConflict(ix *indexDef[Obj], key index.Key, holder Obj) error {
	if pk, err := t.primaryKey(nil, holder); err == nil {
		return fmt.Errorf("table %q: index %q: key %q is held by the object with primary key %q: %w",
			t.meta.name, ix.name, ix.keyString(key), t.indexes[0].keyString(pk), ErrUniqueConstraint)
	}
	return fmt.Errorf("table %q: index %q: key %q: %w", t.meta.name, ix.name, ix.keyString(key), ErrUniqueConstraint)
}
