package strata

import (
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/strata-db/strata/index"
)

// Objects that expire (issue 30): a table declares an ExpiryIndex, and
// ExpireBefore or an Expirer deletes its objects once their time has come,
// in write transactions like any other, so that watchers, change feeds and
// journals see each delete. See docs/expiry.md.

// ExpiryIndex is a secondary index of the time each object expires at.
// Declare it beside the other indexes of a table:
//
//	var byExpiry = strata.ExpiryIndex[*Session]{
//		Name:       "expires",
//		FromObject: func(s *Session) time.Time { return s.Expires },
//	}
//	sessions, err := strata.NewTable(db, "sessions", byID, byExpiry)
//
// ExpireBefore, or an Expirer running in the background, deletes the
// objects whose expiry is at or before the time it is given. Until then an
// object whose time has passed is an object like any other: reads return
// it (filter on the expiry to hide it).
//
// An object whose FromObject returns the zero time never expires and is
// not in the index. The index is ordered by time, then by primary key: it
// is a non-unique index read with the table's usual reads (Query, a Range
// of two Queries, Count), the soonest expiry first.
//
// A write (Insert, Modify, CompareAndSwap) of an object whose expiry is
// at or before time.Now fails with ErrExpired and changes nothing. What
// a table already held is not checked again: Restore, RestoreStored and
// ApplyWrite load objects whatever their expiry (a restart, a replica
// catching up), and leave the expired ones to the next ExpireBefore.
//
// A table has at most one ExpiryIndex, and never as its primary index:
// NewTable fails with ErrDuplicateExpiryIndex or ErrPrimaryIndexExpiry.
type ExpiryIndex[Obj any] struct {
	// Name names the index in queries and errors. It must match
	// NamePattern and be unique within the table.
	Name string
	// FromObject returns the time the object expires at, or the zero
	// time if it never does.
	FromObject func(obj Obj) time.Time
}

// Errors of expiry. A write or a call that returns one changes nothing.
var (
	// ErrExpired: a write stores an object whose expiry (ExpiryIndex) is
	// at or before the current time. Returned wrapped with the table,
	// index and times.
	ErrExpired = errors.New("object already expired")
	// ErrPrimaryIndexExpiry: an ExpiryIndex cannot be the primary index.
	ErrPrimaryIndexExpiry = errors.New("an expiry index cannot be the primary index")
	// ErrDuplicateExpiryIndex: a table has more than one ExpiryIndex.
	ErrDuplicateExpiryIndex = errors.New("a table has at most one expiry index")
	// ErrExpiryBatch: a batch size (ExpireBefore's, or ExpirerOptions'
	// Batch) is out of range.
	ErrExpiryBatch = errors.New("expiry batch size out of range")
	// ErrExpiryOptions: an Expirer's options are out of range (a negative
	// RetryInterval) or name a table it cannot expire.
	ErrExpiryOptions = errors.New("invalid expirer options")
	// ErrExpirerRunning: Run was called on an Expirer that is running.
	ErrExpirerRunning = errors.New("expirer is running already")
)

// expiryIndexer marks ExpiryIndex among the Indexers.
type expiryIndexer interface{ isExpiry() }

func (i ExpiryIndex[Obj]) isExpiry()             {}
func (i ExpiryIndex[Obj]) indexName() string     { return i.Name }
func (i ExpiryIndex[Obj]) isUnique() bool        { return false }
func (i ExpiryIndex[Obj]) parsesText() bool      { return true }
func (i ExpiryIndex[Obj]) keyType() reflect.Type { return reflect.TypeFor[time.Time]() }

// timeIndex is the plain index of times the ExpiryIndex's keys are: its
// text parsing and rendering are the ExpiryIndex's.
func (i ExpiryIndex[Obj]) timeIndex() Index[Obj, time.Time] {
	return Index[Obj, time.Time]{Name: i.Name, FromKey: index.Time}
}

func (i ExpiryIndex[Obj]) fromString(s string) (index.Key, error) {
	return i.timeIndex().fromString(s)
}

func (i ExpiryIndex[Obj]) keyString(k index.Key) string { return i.timeIndex().keyString(k) }

func (i ExpiryIndex[Obj]) objectKeys() func(Obj) index.KeySet {
	from := i.FromObject
	if from == nil {
		return nil
	}
	return func(obj Obj) index.KeySet {
		t := from(obj)
		if t.IsZero() {
			return index.KeySet{}
		}
		var b [expiryKeyLen]byte
		return index.KeySetOf(index.AppendTime(b[:0], t))
	}
}

// expiryKeyLen is the length of an expiry key: index.Time's.
const expiryKeyLen = 12

// Query returns a query for the objects that expire at t; with LowerBound
// or Range, those that expire at t or later. Range(txn, Query(from),
// Query(to)) returns the objects expiring from from up to, not including,
// to, the soonest first. A query allocates nothing.
func (i ExpiryIndex[Obj]) Query(t time.Time) Query[Obj] {
	var b [expiryKeyLen]byte
	q := Query[Obj]{index: i.Name}
	q.key.set(index.AppendTime(b[:0], t))
	return q
}

// checkExpiryIndexes is NewTable's check of the table's ExpiryIndexes.
func checkExpiryIndexes[Obj any](primary Indexer[Obj], secondary []Indexer[Obj]) error {
	if _, ok := primary.(expiryIndexer); ok {
		return fmt.Errorf("index %q: %w", primary.indexName(), ErrPrimaryIndexExpiry)
	}
	n := 0
	for _, ix := range secondary {
		if _, ok := ix.(expiryIndexer); ok {
			if n++; n > 1 {
				return fmt.Errorf("index %q: %w", ix.indexName(), ErrDuplicateExpiryIndex)
			}
		}
	}
	return nil
}

// isExpiryIndex reports whether ix is an ExpiryIndex.
func isExpiryIndex[Obj any](ix Indexer[Obj]) bool {
	_, ok := ix.(expiryIndexer)
	return ok
}

// checkExpiry returns ErrExpired if the expiry in keys, an ExpiryIndex's
// keys of an object being written, is at or before now.
func (t *table[Obj]) checkExpiry(ix *indexDef[Obj], keys *index.KeySet, now time.Time) error {
	if keys.Len() == 0 {
		return nil
	}
	var b [expiryKeyLen]byte
	if string(keys.At(0)) > string(index.AppendTime(b[:0], now)) {
		return nil
	}
	at, _ := index.DecodeTime(keys.At(0))
	return fmt.Errorf("table %q: index %q: expiry %s at or before now (%s): %w",
		t.meta.name, ix.name, at.Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano), ErrExpired)
}

// expiryIndex returns the position of the table's ExpiryIndex, 0 if it
// has none.
func (t *table[Obj]) expiryIndex() int {
	for i := 1; i <= t.nsec; i++ {
		if t.indexes[i].expiry {
			return i
		}
	}
	return 0
}
