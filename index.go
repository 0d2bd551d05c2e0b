package strata

import (
	"bytes"

	"github.com/strata-db/strata/index"
)

// Indexer is an index definition for objects of type Obj: Index is the
// implementation users create. The methods are unexported so that only this
// package's index kinds satisfy it.
type Indexer[Obj any] interface {
	indexName() string
	isUnique() bool
	// objectKeys returns the function that gives an object's keys, which
	// the table calls directly on every write.
	objectKeys() func(Obj) index.KeySet
	fromString(string) (index.Key, error)
}

// Index defines an index of a table of Obj, queried with keys of type Key.
//
// FromObject returns the keys of an object: zero (the object is not in the
// index), one, or several (a multi-valued index, such as tags). The primary
// index must yield exactly one key per object. FromKey encodes a query key
// the same way FromObject encodes object keys; the encoders of package index
// keep byte order equal to value order, which LowerBound and range scans rely
// on.
//
// A unique index holds at most one object per key: inserting an object whose
// key another object holds fails with ErrUniqueConstraint. A non-unique index
// holds any number of objects per key.
type Index[Obj any, Key any] struct {
	// Name names the index in queries and errors. It must match
	// NamePattern and be unique within the table.
	Name string
	// FromObject returns the object's keys in this index.
	FromObject func(obj Obj) index.KeySet
	// FromKey encodes a query key.
	FromKey func(key Key) index.Key
	// FromString, optional, parses a key typed by a person (command-line
	// tools, HTTP queries) and encodes it.
	FromString func(key string) (index.Key, error)
	// Unique makes the index hold at most one object per key.
	Unique bool
}

func (i Index[Obj, Key]) indexName() string                  { return i.Name }
func (i Index[Obj, Key]) isUnique() bool                     { return i.Unique }
func (i Index[Obj, Key]) objectKeys() func(Obj) index.KeySet { return i.FromObject }

func (i Index[Obj, Key]) fromString(s string) (index.Key, error) {
	if i.FromString == nil {
		return nil, errNoFromString
	}
	return i.FromString(s)
}

// Query returns a query for objects whose key in this index is key (or,
// for Prefix and LowerBound, starts with or is at least key).
func (i Index[Obj, Key]) Query(key Key) Query[Obj] {
	return Query[Obj]{index: i.Name, key: i.FromKey(key)}
}

// QueryFromObject returns a query for the first key obj has in this index,
// and false if it has none.
func (i Index[Obj, Key]) QueryFromObject(obj Obj) (Query[Obj], bool) {
	keys := i.FromObject(obj)
	if keys.Len() == 0 {
		return Query[Obj]{}, false
	}
	// A copy: the key may live in keys (index.KeySetOf).
	return Query[Obj]{index: i.Name, key: bytes.Clone(keys.At(0))}, true
}

// QueryKey returns a query for an already encoded key.
func (i Index[Obj, Key]) QueryKey(key index.Key) Query[Obj] {
	return Query[Obj]{index: i.Name, key: key}
}

// Query names an index of a table of Obj and a key in it. Create queries
// with Index.Query.
type Query[Obj any] struct {
	index string
	key   index.Key
}

// IndexName returns the name of the index the query is for.
func (q Query[Obj]) IndexName() string { return q.index }

// Key returns the query's encoded key.
func (q Query[Obj]) Key() index.Key { return q.key }
