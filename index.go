package strata

import (
	"reflect"
	"unsafe"

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
	// fromString parses a key typed as text (Index.FromString, or its
	// default).
	fromString(string) (index.Key, error)
	// keyString renders a key for people (Index.ToString, or its default,
	// or index.Key.String). The text may hold any byte: quote it (%q) in
	// messages.
	keyString(index.Key) string
	// parsesText reports whether fromString can succeed at all.
	parsesText() bool
	// keyType is the type of the index's query keys.
	keyType() reflect.Type
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
//
// # Keys as text
//
// Tools (the untyped table access, command lines, HTTP queries) take keys
// typed as text, and error messages show keys; FromString and ToString are
// how. Both are optional and have defaults when the Key type has a text
// form of its own:
//
//   - a type whose pointer implements encoding.TextUnmarshaler, such as
//     time.Time (RFC 3339), netip.Addr and netip.Prefix, uses it (and
//     encoding.TextMarshaler, to render);
//   - otherwise a string, bool, integer, float or byte-slice type, named or
//     not, is written as package strconv writes it (integers in base 10),
//     and a byte slice in hexadecimal with a leading "0x".
//
// The default FromString reads the text into a Key and encodes it with
// FromKey, so it is right however FromKey encodes. The default ToString
// decodes the key with the decoders of package index that fit the Key type
// and shows the value's text only if that text, read back and encoded with
// FromKey, gives the very same key; it never shows a value the key does not
// hold. Where it cannot (a composite, a custom encoding), the key is shown
// by index.Key's String: as text if printable, else in hex. Set FromString
// and ToString for composite keys (index.CompositeParser and
// index.CompositeFormatter) and other encodings of your own.
type Index[Obj any, Key any] struct {
	// Name names the index in queries and errors. It must match
	// NamePattern and be unique within the table.
	Name string
	// FromObject returns the object's keys in this index.
	FromObject func(obj Obj) index.KeySet
	// FromKey encodes a query key.
	FromKey func(key Key) index.Key
	// FromString, optional, parses a key typed by a person (command-line
	// tools, HTTP queries) and encodes it, as the parsers of package
	// index do (index.Uint64String, index.FromString, ...). Without it,
	// the default described above applies, if the Key type has one.
	FromString func(key string) (index.Key, error)
	// ToString, optional, renders an encoded key as text for people, the
	// inverse of FromString, as the formatters of package index do
	// (index.FormatUint64, ...). When it fails, the key is shown by
	// index.Key's String. Without it, the default described above
	// applies.
	ToString func(key index.Key) (string, error)
	// Unique makes the index hold at most one object per key.
	Unique bool
}

func (i Index[Obj, Key]) indexName() string                  { return i.Name }
func (i Index[Obj, Key]) isUnique() bool                     { return i.Unique }
func (i Index[Obj, Key]) objectKeys() func(Obj) index.KeySet { return i.FromObject }

func (i Index[Obj, Key]) fromString(s string) (index.Key, error) {
	if i.FromString != nil {
		return i.FromString(s)
	}
	if i.FromKey != nil {
		if k, ok, err := parseKeyText[Key](s); ok {
			if err != nil {
				return nil, err
			}
			return i.FromKey(k), nil
		}
	}
	return nil, ErrNoFromString
}

func (i Index[Obj, Key]) parsesText() bool {
	return i.FromString != nil || (i.FromKey != nil && hasKeyText[Key]())
}

func (i Index[Obj, Key]) keyType() reflect.Type { return reflect.TypeFor[Key]() }

func (i Index[Obj, Key]) keyString(k index.Key) string {
	if i.ToString != nil {
		if s, err := i.ToString(k); err == nil {
			return s
		}
	} else if s, ok := defaultKeyString(i.FromKey, k); ok {
		return s
	}
	return k.String()
}

// KeyString renders an encoded key of the index for people, as error
// messages show it: with ToString, or its default, or else as index.Key's
// String does. The text may hold any byte: quote it (%q) in messages.
func (i Index[Obj, Key]) KeyString(k index.Key) string { return i.keyString(k) }

// Query returns a query for objects whose key in this index is key (or,
// for Prefix and LowerBound, starts with or is at least key).
//
// With FromKey set to one of package index's fixed-width integer encoders
// (index.Uint64, index.Int32, ...), the key is encoded into the query
// itself, so that building a query allocates nothing.
func (i Index[Obj, Key]) Query(key Key) Query[Obj] {
	// index.Uint64, the usual primary key, is recognized first, before
	// the general path: the key is encoded in registers, with no call.
	if unsafe.Sizeof(key) == 8 && isUint64Encoder(unsafe.Pointer(&i.FromKey)) {
		return Query[Obj]{index: i.Name, key: uint64Key(*(*uint64)(unsafe.Pointer(&key)))}
	}
	switch unsafe.Sizeof(key) {
	case 2, 4, 8: // the sizes of the integer keys fixedKey encodes
		return query(&i, key)
	}
	return Query[Obj]{index: i.Name, key: sliceKey(i.FromKey(key))}
}

// query is Query for every other FromKey.
func query[Obj, Key any](i *Index[Obj, Key], key Key) Query[Obj] {
	if k, ok := fixedKey(codePointer(i.FromKey), &key); ok {
		return Query[Obj]{index: i.Name, key: k}
	}
	return Query[Obj]{index: i.Name, key: sliceKey(i.FromKey(key))}
}

// QueryFromObject returns a query for the first key obj has in this index,
// and false if it has none.
func (i Index[Obj, Key]) QueryFromObject(obj Obj) (Query[Obj], bool) {
	keys := i.FromObject(obj)
	if keys.Len() == 0 {
		return Query[Obj]{}, false
	}
	// A copy: the key may live in keys (index.KeySetOf).
	q := Query[Obj]{index: i.Name}
	q.key.set(keys.At(0))
	return q, true
}

// QueryKey returns a query for an already encoded key.
func (i Index[Obj, Key]) QueryKey(key index.Key) Query[Obj] {
	return Query[Obj]{index: i.Name, key: sliceKey(key)}
}

// Query names an index of a table of Obj and a key in it. Create queries
// with Index.Query.
type Query[Obj any] struct {
	index string
	key   queryKey
}

// IndexName returns the name of the index the query is for.
func (q Query[Obj]) IndexName() string { return q.index }

// Key returns the query's encoded key.
func (q Query[Obj]) Key() index.Key {
	if q.key.inlined() < 0 {
		return q.key.bytes()
	}
	return append(index.Key(nil), q.key.bytes()...)
}

// RevisionIndexName is the name of the revision index (RevisionIndex).
// Index names must begin with a letter, so no other index can take it.
const RevisionIndexName = "__revision__"

// RevisionIndex returns the revision index of a table of Obj: passed among
// a table's secondary indexes (NewTable), it makes the table keep its
// objects by the revision they were written at, so that
// LowerBound(txn, ByRevision(rev)) iterates the objects written at rev or
// later, in revision order. Deleted objects leave it. A table without it
// pays nothing for it; one with it pays a tree insert and delete per
// write (BenchmarkDB_WriteTxn_100_ByRevision).
func RevisionIndex[Obj any]() Indexer[Obj] { return revisionIndex[Obj]{} }

// ByRevision returns a query of the revision index for revision rev.
func ByRevision[Obj any](rev Revision) Query[Obj] {
	k, _ := fixedKey(pcUint64, &rev)
	return Query[Obj]{index: RevisionIndexName, key: k}
}

// revisionIndex is the revision index's Indexer. The table writes its keys
// itself: objectKeys is never called.
type revisionIndex[Obj any] struct{}

func (revisionIndex[Obj]) indexName() string                  { return RevisionIndexName }
func (revisionIndex[Obj]) keyType() reflect.Type              { return reflect.TypeFor[Revision]() }
func (revisionIndex[Obj]) parsesText() bool                   { return true }
func (revisionIndex[Obj]) isUnique() bool                     { return true }
func (revisionIndex[Obj]) objectKeys() func(Obj) index.KeySet { return nil }

func (revisionIndex[Obj]) fromString(s string) (index.Key, error) {
	return Index[Obj, Revision]{Name: RevisionIndexName, FromKey: index.Uint64}.fromString(s)
}

func (revisionIndex[Obj]) keyString(k index.Key) string {
	return Index[Obj, Revision]{Name: RevisionIndexName, FromKey: index.Uint64}.keyString(k)
}
