package strata

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"

	"github.com/strata-db/strata/index"
)

// AnyTable reads and writes a table without knowing its object type, for
// tools that serve any table: an HTTP API, a command line, script
// commands, debug dumps. Objects come out as any (the table's Obj inside);
// keys go in as text, through each index's FromString (or its default), or
// raw. Go code that knows the type uses the typed Table instead: it needs
// no boxing and no checks.
//
// Get an AnyTable with DB.AnyTable, or wrap a table: AnyTable{Meta: t}.
// Its methods panic if Meta is nil.
type AnyTable struct {
	Meta TableMeta
}

// untypedTable is the part of a table that AnyTable uses. Every typed
// table implements it; TableMeta.untyped hands it out.
type untypedTable interface {
	objectType() reflect.Type
	indexInfo() []IndexInfo
	// indexPos returns the position of the named index; "" names the
	// primary index.
	indexPos(name string) (int, error)
	parseKeyAt(pos int, text string) (index.Key, error)
	// lpmAt reports whether the index at pos is an LPMIndex.
	lpmAt(pos int) bool
	keyStringAt(pos int, key index.Key) string
	anyRead(txn ReadTxn, pos int, q AnyQuery, watch bool) (iter.Seq[AnyObject], <-chan struct{})
	// anyCount serves AnyTable.Count (count.go).
	anyCount(txn ReadTxn, pos int, q AnyQuery, watch bool) (int, <-chan struct{}, error)
	anyInsert(txn WriteTxn, obj any) (old any, hadOld bool, err error)
	anyDelete(txn WriteTxn, obj any) (old any, hadOld bool, err error)
	anyDeleteEach(txn WriteTxn, objs iter.Seq[AnyObject]) (int, error)
	decodeJSON(data []byte) (any, error)
	anyChanges(txn WriteTxn, opts []FeedOption) (AnyChangeIterator, error)
	// anyPrimaryKey serves AnyTable.PrimaryKey (anyinspect.go).
	anyPrimaryKey(obj any) (index.Key, error)
}

// AnyTable returns the table registered under name, for untyped access.
// The error wraps ErrTableNotFound if there is none.
func (db *DB) AnyTable(name TableName) (AnyTable, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for _, m := range db.tables {
		if m.name == name {
			return AnyTable{Meta: m.table}, nil
		}
	}
	return AnyTable{}, fmt.Errorf("table %q: %w", name, ErrTableNotFound)
}

// IndexInfo describes one index of a table.
type IndexInfo struct {
	// Name is the index's name.
	Name string
	// Primary is set for the table's primary index, which comes first.
	Primary bool
	// Unique: the index holds at most one object per key.
	Unique bool
	// KeyType is the type of the index's query keys (Index's Key).
	KeyType reflect.Type
	// Text: the index takes keys typed as text, by its FromString or the
	// default for its key type (see Index).
	Text bool
	// LPM: the index is an LPMIndex. QueryList with an address key (a
	// Containing query) selects the prefixes that contain it, the longest
	// first, and QueryPrefix with a prefix key the prefixes within it.
	LPM bool
}

// Name returns the table's name.
func (t AnyTable) Name() TableName { return t.Meta.Name() }

// Indexes describes the table's indexes, the primary first.
func (t AnyTable) Indexes() []IndexInfo { return t.Meta.untyped().indexInfo() }

// ObjectType returns the table's object type (its Obj), for tools that
// decode objects themselves (from YAML, say) before inserting them.
func (t AnyTable) ObjectType() reflect.Type { return t.Meta.untyped().objectType() }

// NumObjects returns the number of objects in the table.
func (t AnyTable) NumObjects(txn ReadTxn) int { return t.Meta.NumObjects(txn) }

// Revision returns the table's revision: that of its latest change.
func (t AnyTable) Revision(txn ReadTxn) Revision { return t.Meta.Revision(txn) }

// Initialized reports whether every initializer of the table is done, and
// returns a channel that is closed once they all are.
func (t AnyTable) Initialized(txn ReadTxn) (bool, <-chan struct{}) { return t.Meta.Initialized(txn) }

// PendingInitializers returns the names of the initializers that are not
// done yet.
func (t AnyTable) PendingInitializers(txn ReadTxn) []string {
	return t.Meta.PendingInitializers(txn)
}

// ParseKey encodes a key of the named index typed as text ("" names the
// primary index). The error wraps ErrIndexNotFound, ErrNoFromString if
// the index takes no text, or index.ErrParseKey if the text does not
// parse.
func (t AnyTable) ParseKey(indexName, text string) (index.Key, error) {
	u := t.Meta.untyped()
	pos, err := u.indexPos(indexName)
	if err != nil {
		return nil, err
	}
	return u.parseKeyAt(pos, text)
}

// KeyString renders a key of the named index as text ("" names the
// primary index): by the index's ToString or its default, as text that
// ParseKey reads back when it can, and as index.Key's String otherwise.
// The error wraps ErrIndexNotFound.
func (t AnyTable) KeyString(indexName string, key index.Key) (string, error) {
	u := t.Meta.untyped()
	pos, err := u.indexPos(indexName)
	if err != nil {
		return "", err
	}
	return u.keyStringAt(pos, key), nil
}

// QueryOp is what an AnyQuery selects in its index.
type QueryOp uint8

const (
	// QueryAll selects every object in the index, in key order. (On a
	// secondary index, objects without a key in it are not there.)
	QueryAll QueryOp = iota
	// QueryList selects the objects whose key is Key: at most one in a
	// unique index.
	QueryList
	// QueryPrefix selects the objects whose key starts with Key.
	QueryPrefix
	// QueryLowerBound selects the objects whose key is at least Key.
	QueryLowerBound
	// QueryRange selects the objects whose key is at least Key and less
	// than To.
	QueryRange
)

var queryOpNames = [...]string{"all", "list", "prefix", "lowerbound", "range"}

// String returns the op's name: all, list, prefix, lowerbound or range.
func (op QueryOp) String() string {
	if int(op) < len(queryOpNames) {
		return queryOpNames[op]
	}
	return fmt.Sprintf("QueryOp(%d)", op)
}

// ParseQueryOp returns the op named by String's name ("get" is taken for
// list). The error wraps ErrInvalidQuery.
func ParseQueryOp(s string) (QueryOp, error) {
	if s == "get" {
		return QueryList, nil
	}
	for i, n := range queryOpNames {
		if n == s {
			return QueryOp(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown query op %q", ErrInvalidQuery, s)
}

// AnyQuery says which objects of a table AnyTable.Read returns: those of
// one index that Op selects with Key (and To), in key order, optionally
// after a cursor. Keys are encoded: take them from AnyTable.ParseKey for
// text, or use raw keys as they are.
type AnyQuery struct {
	// Index names the index; "" is the primary index.
	Index string
	// Op is what to select; the zero QueryOp is QueryAll.
	Op QueryOp
	// Key is QueryList's key, QueryPrefix's prefix, QueryLowerBound's
	// bound and QueryRange's start.
	Key index.Key
	// To is QueryRange's end, excluded.
	To index.Key
	// After, if not nil, is the Cursor of an object an earlier Read of the
	// same query returned: the read starts just after it. So a tool pages
	// through a large result with one seek per page.
	After []byte
}

// AnyObject is an object AnyTable.Read returns.
type AnyObject struct {
	// Object is the object, of the table's type (ObjectType).
	Object any
	// Revision is the revision it was written at.
	Revision Revision
	// Cursor is the object's position in the index (the index's entry
	// key): a later Read of the same query with After set to it starts
	// just after this object, in a newer snapshot as well. It is shared
	// with the table and must not be modified; copy it to keep it past
	// the snapshot's life. In an index where an object has several keys,
	// each Read returns the object once, but pages read with cursors may
	// return it once per key.
	Cursor []byte
}

// Read returns the objects q selects, in the order of their keys in q's
// index (for an LPMIndex's address key, the longest prefix first). The
// iterator reads txn's snapshot however often it runs. The error wraps
// ErrIndexNotFound or ErrInvalidQuery (an op out of range, To set outside
// QueryRange, or an LPMIndex's address key outside QueryList); a bad
// query changes nothing and reads nothing.
func (t AnyTable) Read(txn ReadTxn, q AnyQuery) (iter.Seq[AnyObject], error) {
	seq, _, err := t.read(txn, q, false)
	return seq, err
}

// ReadWatch is Read with a channel that is closed when the result of the
// same query in a newer snapshot may differ, for blocking reads: the
// channel of the object for QueryList on a unique index, of the key or
// prefix for QueryList and QueryPrefix, of the whole index otherwise.
func (t AnyTable) ReadWatch(txn ReadTxn, q AnyQuery) (iter.Seq[AnyObject], <-chan struct{}, error) {
	return t.read(txn, q, true)
}

func (t AnyTable) read(txn ReadTxn, q AnyQuery, watch bool) (iter.Seq[AnyObject], <-chan struct{}, error) {
	switch {
	case q.Op > QueryRange:
		return nil, nil, fmt.Errorf("table %q: %w: %v", t.Meta.Name(), ErrInvalidQuery, q.Op)
	case q.To != nil && q.Op != QueryRange:
		return nil, nil, fmt.Errorf("table %q: %w: To set for %v", t.Meta.Name(), ErrInvalidQuery, q.Op)
	}
	u := t.Meta.untyped()
	pos, err := u.indexPos(q.Index)
	if err != nil {
		return nil, nil, err
	}
	if u.lpmAt(pos) && q.Op != QueryList && q.Op != QueryAll && (isContainingKey(q.Key) || isContainingKey(q.To)) {
		return nil, nil, fmt.Errorf("table %q: index %q: %w: %v with an address key, which selects with list only",
			t.Meta.Name(), q.Index, ErrInvalidQuery, q.Op)
	}
	seq, ch := u.anyRead(txn, pos, q, watch)
	return seq, ch, nil
}

// objectPairs adapts Read's objects to statedb's iterator of objects and
// revisions.
func objectPairs(seq iter.Seq[AnyObject]) iter.Seq2[any, Revision] {
	return func(yield func(any, Revision) bool) {
		for o := range seq {
			if !yield(o.Object, o.Revision) {
				return
			}
		}
	}
}

// textRead is a Read of one op with a key typed as text.
func (t AnyTable) textRead(txn ReadTxn, op QueryOp, indexName, key string) (iter.Seq2[any, Revision], error) {
	k, err := t.ParseKey(indexName, key)
	if err != nil {
		return nil, err
	}
	seq, err := t.Read(txn, AnyQuery{Index: indexName, Op: op, Key: k})
	if err != nil {
		return nil, err
	}
	return objectPairs(seq), nil
}

// Get returns the first object whose key in the named index is key, typed
// as text. The error is ParseKey's.
func (t AnyTable) Get(txn ReadTxn, indexName, key string) (obj any, rev Revision, found bool, err error) {
	seq, err := t.textRead(txn, QueryList, indexName, key)
	if err != nil {
		return nil, 0, false, err
	}
	for obj, rev := range seq {
		return obj, rev, true, nil
	}
	return nil, 0, false, nil
}

// List returns the objects whose key in the named index is key, typed as
// text. The error is ParseKey's.
func (t AnyTable) List(txn ReadTxn, indexName, key string) (iter.Seq2[any, Revision], error) {
	return t.textRead(txn, QueryList, indexName, key)
}

// Prefix returns the objects whose key in the named index starts with the
// key typed as text. The error is ParseKey's.
func (t AnyTable) Prefix(txn ReadTxn, indexName, key string) (iter.Seq2[any, Revision], error) {
	return t.textRead(txn, QueryPrefix, indexName, key)
}

// LowerBound returns the objects whose key in the named index is at least
// the key typed as text. The error is ParseKey's.
func (t AnyTable) LowerBound(txn ReadTxn, indexName, key string) (iter.Seq2[any, Revision], error) {
	return t.textRead(txn, QueryLowerBound, indexName, key)
}

// All returns every object, in primary key order.
func (t AnyTable) All(txn ReadTxn) iter.Seq2[any, Revision] {
	seq, _ := t.Read(txn, AnyQuery{})
	return objectPairs(seq)
}

// AllWatch is All with a channel that closes on any change to the table.
func (t AnyTable) AllWatch(txn ReadTxn) (iter.Seq2[any, Revision], <-chan struct{}) {
	seq, ch, _ := t.ReadWatch(txn, AnyQuery{})
	return objectPairs(seq), ch
}

// Insert stores obj, which must be of the table's type, as the typed
// table's Insert does. The error wraps ErrObjectType for an object of
// another type, or is Insert's.
func (t AnyTable) Insert(txn WriteTxn, obj any) (old any, hadOld bool, err error) {
	return t.Meta.untyped().anyInsert(txn, obj)
}

// Delete removes the object with obj's primary key, obj being of the
// table's type, as the typed table's Delete does. The error wraps
// ErrObjectType for an object of another type, or is Delete's.
func (t AnyTable) Delete(txn WriteTxn, obj any) (old any, hadOld bool, err error) {
	return t.Meta.untyped().anyDelete(txn, obj)
}

// DeleteEach removes, in txn, every object objs yields, as DeleteEach of
// the typed table does: objs is read to its end before the first change
// (so it may be a read of the table through txn itself, And's, In's or
// Or's among them), an object is found by its primary key, one the table
// does not hold is skipped, and the count of objects removed is returned.
// An object of another type fails with an error that wraps ErrObjectType,
// before anything changed.
func (t AnyTable) DeleteEach(txn WriteTxn, objs iter.Seq[AnyObject]) (int, error) {
	return t.Meta.untyped().anyDeleteEach(txn, objs)
}

// DecodeJSON decodes data, as encoding/json does, into a new object of the
// table's type. The error wraps the decoder's.
func (t AnyTable) DecodeJSON(data []byte) (any, error) {
	return t.Meta.untyped().decodeJSON(data)
}

// The typed table's side.

func (t *table[Obj]) untyped() untypedTable { return t }

func (t *table[Obj]) objectType() reflect.Type { return reflect.TypeFor[Obj]() }

func (t *table[Obj]) indexInfo() []IndexInfo {
	infos := make([]IndexInfo, len(t.indexes))
	for i, ix := range t.indexes {
		infos[i] = IndexInfo{Name: ix.name, Primary: i == 0, Unique: ix.unique, KeyType: ix.keyType, Text: ix.text, LPM: ix.lpm}
	}
	return infos
}

func (t *table[Obj]) indexPos(name string) (int, error) {
	if name == "" {
		return 0, nil
	}
	for i := range t.indexes {
		if t.indexes[i].name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("table %q: index %q: %w", t.meta.name, name, ErrIndexNotFound)
}

func (t *table[Obj]) parseKeyAt(pos int, text string) (index.Key, error) {
	ix := &t.indexes[pos]
	k, err := ix.fromString(text)
	switch {
	case err == nil:
		return k, nil
	case errors.Is(err, ErrNoFromString):
		return nil, fmt.Errorf("table %q: index %q: %w", t.meta.name, ix.name, err)
	case !errors.Is(err, index.ErrParseKey):
		// The index's own FromString: make its error one of ours.
		err = fmt.Errorf("%w: %w", index.ErrParseKey, err)
	}
	return nil, fmt.Errorf("table %q: index %q: key %q: %w", t.meta.name, ix.name, text, err)
}

func (t *table[Obj]) keyStringAt(pos int, key index.Key) string { return t.indexes[pos].keyString(key) }

func (t *table[Obj]) lpmAt(pos int) bool { return t.indexes[pos].lpm }

func (t *table[Obj]) anyInsert(txn WriteTxn, obj any) (any, bool, error) {
	o, ok := obj.(Obj)
	if !ok {
		return nil, false, t.objectTypeError(obj)
	}
	old, hadOld, err := t.Insert(txn, o)
	if !hadOld {
		return nil, false, err
	}
	return old, true, err
}

func (t *table[Obj]) anyDelete(txn WriteTxn, obj any) (any, bool, error) {
	o, ok := obj.(Obj)
	if !ok {
		return nil, false, t.objectTypeError(obj)
	}
	old, hadOld, err := t.Delete(txn, o)
	if !hadOld {
		return nil, false, err
	}
	return old, true, err
}

func (t *table[Obj]) anyDeleteEach(txn WriteTxn, objs iter.Seq[AnyObject]) (int, error) {
	tt, err := t.txnFor(txn)
	if err != nil {
		return 0, err
	}
	var typed []Obj
	for o := range objs {
		obj, ok := o.Object.(Obj)
		if !ok {
			return 0, t.objectTypeError(o.Object)
		}
		typed = append(typed, obj)
	}
	return tt.removeEach(func(yield func(Obj, Revision) bool) {
		for _, o := range typed {
			if !yield(o, 0) {
				return
			}
		}
	})
}

func (t *table[Obj]) objectTypeError(obj any) error {
	return fmt.Errorf("table %q: %w: %T, want %v", t.meta.name, ErrObjectType, obj, reflect.TypeFor[Obj]())
}

func (t *table[Obj]) decodeJSON(data []byte) (any, error) {
	var obj Obj
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("table %q: decoding %v: %w", t.meta.name, reflect.TypeFor[Obj](), err)
	}
	return obj, nil
}

// anyScan is an AnyQuery in the terms of an index tree: the entry keys
// from lower (inclusive) that start with prefix and are below upper.
type anyScan struct {
	lower, prefix, upper []byte
	hasUpper             bool
	// after: skip the entry with this key (the cursor the scan resumes
	// from, which lower was raised to).
	after []byte
	dedup bool
}

// anyScanOf translates q for an index whose entries, if it is not unique,
// are the escaped key followed by the primary key.
func anyScanOf(unique bool, q *AnyQuery) anyScan {
	var s anyScan
	switch q.Op {
	case QueryList:
		// (On a unique index, anyRead reads the one key with Get.)
		if !unique {
			s.prefix = index.AppendEscaped(nil, q.Key)
		}
	case QueryPrefix:
		s.prefix = q.Key
		if !unique {
			s.prefix = index.AppendEscapedPrefix(nil, q.Key)
		}
	case QueryLowerBound, QueryRange:
		s.lower = q.Key
		if !unique {
			s.lower = index.AppendEscaped(nil, q.Key)
		}
		if q.Op == QueryRange {
			s.upper, s.hasUpper = q.To, true
			if !unique {
				s.upper = index.AppendEscaped(nil, q.To)
			}
		}
	}
	if s.prefix != nil && bytes.Compare(s.prefix, s.lower) > 0 {
		s.lower = s.prefix
	}
	if q.After != nil && bytes.Compare(q.After, s.lower) >= 0 {
		s.lower, s.after = q.After, q.After
	}
	return s
}

func (t *table[Obj]) anyRead(txn ReadTxn, pos int, q AnyQuery, watch bool) (iter.Seq[AnyObject], <-chan struct{}) {
	st := t.read(txn)
	tree := st.tree(pos)
	unique := t.indexes[pos].unique
	if t.indexes[pos].lpm {
		if seq, ch, done := t.anyReadLPM(txn, pos, q, watch); done {
			return seq, ch
		}
	}
	s := anyScanOf(unique, &q)
	s.dedup = st.dedup(pos)
	var ch <-chan struct{}
	if watch {
		switch {
		case q.Op == QueryList && unique:
			_, ch, _ = tree.GetWatch(q.Key)
		case s.prefix != nil:
			_, ch = tree.PrefixWatch(s.prefix)
		default:
			ch = tree.RootWatch()
		}
	}
	if q.Op == QueryList && unique {
		// A point read: one descent, no scan.
		o, found := tree.Get(q.Key)
		if !found || (q.After != nil && bytes.Compare(q.After, q.Key) >= 0) {
			return func(func(AnyObject) bool) {}, ch
		}
		one := AnyObject{Object: o.obj, Revision: o.rev, Cursor: q.Key}
		return func(yield func(AnyObject) bool) { yield(one) }, ch
	}
	return func(yield func(AnyObject) bool) {
		f := anyFilter{anyScan: s}
		if s.lower == nil && s.prefix == nil && !s.hasUpper && !s.dedup {
			// Everything: nothing to check per entry.
			for k, o := range tree.All() {
				if !yield(AnyObject{o.obj, o.rev, k}) {
					return
				}
			}
			return
		}
		if s.lower == nil {
			for k, o := range tree.All() {
				if admit, more := f.admit(k, o.rev); !more || admit && !yield(AnyObject{o.obj, o.rev, k}) {
					return
				}
			}
			return
		}
		for k, o := range tree.LowerBound(s.lower) {
			if admit, more := f.admit(k, o.rev); !more || admit && !yield(AnyObject{o.obj, o.rev, k}) {
				return
			}
		}
	}, ch
}

// anyFilter applies an anyScan to the entries of a tree scan from its
// lower bound.
type anyFilter struct {
	anyScan
	seen map[Revision]struct{}
}

// admit reports whether the entry with key k, of an object at revision
// rev, is in the scan, and whether the scan goes on past it.
func (f *anyFilter) admit(k []byte, rev Revision) (admit, more bool) {
	switch {
	case f.prefix != nil && !bytes.HasPrefix(k, f.prefix):
		return false, false
	case f.hasUpper && bytes.Compare(k, f.upper) >= 0:
		return false, false
	case f.after != nil && bytes.Equal(k, f.after):
		return false, true
	case f.dedup:
		if _, dup := f.seen[rev]; dup {
			return false, true
		}
		if f.seen == nil {
			f.seen = map[Revision]struct{}{}
		}
		f.seen[rev] = struct{}{}
	}
	return true, true
}
