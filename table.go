package strata

import (
	"fmt"
	"iter"
	"reflect"
	"sync/atomic"
	"unsafe"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/metrics"
	"github.com/strata-db/strata/part"
)

// Revision orders the changes of a table: every insert and delete takes the
// table's next revision, and an object carries the revision it was written
// at.
type Revision = uint64

// TableName is the name of a table.
type TableName = string

// MaxSecondaryIndexes is the most secondary indexes a table may have.
const MaxSecondaryIndexes = 62

// MaxKeyLen is the length of the longest key an index accepts: a third of
// the radix tree's limit (part.MaxKeyLen), which leaves room for a
// non-unique index's escaping and the primary key it appends. Longer keys
// are refused with ErrKeyTooLong.
const MaxKeyLen = part.MaxKeyLen / 3

// maxKeyLen is MaxKeyLen, lowered by tests.
var maxKeyLen = MaxKeyLen

// TableMeta is what every table is, whatever its object type: the handle
// passed to DB.WriteTxn.
type TableMeta interface {
	// Name returns the table's name.
	Name() TableName
	// DB returns the database the table belongs to.
	DB() *DB
	// Indexes returns the names of the table's indexes, the primary first.
	Indexes() []string
	// NumObjects returns the number of objects in the table.
	NumObjects(ReadTxn) int
	// Revision returns the table's revision: that of its latest change.
	Revision(ReadTxn) Revision
	// LastWriter returns the name of the database handle (DB.NewHandle)
	// whose transaction last changed the table's objects, as of the
	// snapshot; "" if none did.
	LastWriter(ReadTxn) string
	// Initialized reports whether every initializer registered with the
	// table (RWTable.RegisterInitializer) is done, and returns a channel
	// that is closed once they all are.
	Initialized(ReadTxn) (bool, <-chan struct{})
	// PendingInitializers returns the names of the initializers that are
	// not done yet.
	PendingInitializers(ReadTxn) []string

	tableMeta() *tableMeta
	// stateStats returns the figures of a state of the table, for metrics:
	// its objects, and the deletes logged before it for change feeds.
	stateStats(*tableStateHeader) (objects int, logDeletes uint64)
	// dropUnobservedLog drops the change log if the table has no feeds and
	// is not locked.
	dropUnobservedLog()
	// discardPending closes the watch channels of the nodes of a state
	// that will never be published, created at or after m.
	discardPending(h *tableStateHeader, m part.Mark)
	// dropFailedTip cuts the change log back from a failed tip to the
	// published state. The table is locked.
	dropFailedTip(tip *tableStateHeader)
	// untyped returns the table's side of AnyTable.
	untyped() untypedTable
}

// Table is a table of objects of type Obj, for reading. Obj values are
// immutable once inserted: never change an object that is in a table (or
// was read from one); insert a changed copy instead.
//
// Every read takes a ReadTxn and sees the snapshot it holds. Iterators
// (iter.Seq2 of objects and their revisions) read that snapshot too, so
// they may be kept and run later, any number of times. Objects come in the
// order of the index's keys: byte order, which the encoders of package index
// make equal to value order.
//
// The Watch variants also return a channel that is closed when the result
// of the same query in a newer snapshot may differ. A channel never stays
// open after its query's result changed. It may close without a change
// (when objects with nearby keys change), except for Get and List on a
// unique index for a key that exists: those close exactly when that object
// is replaced or deleted.
type Table[Obj any] interface {
	TableMeta

	// PrimaryIndexer returns the table's primary index.
	PrimaryIndexer() Indexer[Obj]

	// Get returns the first object whose key in the query's index is the
	// query's key (for an LPMIndex's Containing query, the object of the
	// longest prefix that contains the address: see LPMIndex).
	Get(ReadTxn, Query[Obj]) (obj Obj, rev Revision, found bool)
	// GetWatch is Get with a watch channel.
	GetWatch(ReadTxn, Query[Obj]) (obj Obj, rev Revision, watch <-chan struct{}, found bool)
	// List returns the objects whose key in the query's index is the
	// query's key: at most one in a unique index (for an LPMIndex's
	// Containing query, those of every prefix that contains the address,
	// the longest first).
	List(ReadTxn, Query[Obj]) iter.Seq2[Obj, Revision]
	// ListWatch is List with a watch channel.
	ListWatch(ReadTxn, Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{})
	// Prefix returns the objects whose key in the query's index starts
	// with the query's key.
	Prefix(ReadTxn, Query[Obj]) iter.Seq2[Obj, Revision]
	// PrefixWatch is Prefix with a watch channel.
	PrefixWatch(ReadTxn, Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{})
	// LowerBound returns the objects whose key in the query's index is at
	// least the query's key.
	LowerBound(ReadTxn, Query[Obj]) iter.Seq2[Obj, Revision]
	// LowerBoundWatch is LowerBound with a watch channel.
	LowerBoundWatch(ReadTxn, Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{})
	// Range returns the objects whose key in the index is at least from's
	// key and less than to's. Both queries must be for the same index.
	Range(txn ReadTxn, from, to Query[Obj]) iter.Seq2[Obj, Revision]
	// RangeWatch is Range with a watch channel.
	RangeWatch(txn ReadTxn, from, to Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{})
	// All returns every object, in primary key order.
	All(ReadTxn) iter.Seq2[Obj, Revision]
	// AllWatch is All with a channel that closes on any change to the
	// table.
	AllWatch(ReadTxn) (iter.Seq2[Obj, Revision], <-chan struct{})

	// ReverseAll is All in descending order.
	ReverseAll(ReadTxn) iter.Seq2[Obj, Revision]
	// ReverseAllWatch is ReverseAll with a watch channel.
	ReverseAllWatch(ReadTxn) (iter.Seq2[Obj, Revision], <-chan struct{})
	// ReversePrefix is Prefix in descending order.
	ReversePrefix(ReadTxn, Query[Obj]) iter.Seq2[Obj, Revision]
	// ReversePrefixWatch is ReversePrefix with a watch channel.
	ReversePrefixWatch(ReadTxn, Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{})
	// ReverseLowerBound returns the objects whose key in the query's index
	// is at most the query's key, in descending order.
	ReverseLowerBound(ReadTxn, Query[Obj]) iter.Seq2[Obj, Revision]
	// ReverseLowerBoundWatch is ReverseLowerBound with a watch channel.
	ReverseLowerBoundWatch(ReadTxn, Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{})
	// ReverseRange is Range in descending order.
	ReverseRange(txn ReadTxn, from, to Query[Obj]) iter.Seq2[Obj, Revision]
	// ReverseRangeWatch is ReverseRange with a watch channel.
	ReverseRangeWatch(txn ReadTxn, from, to Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{})

	// Changes returns a change feed of the table: an iterator over every
	// object inserted, replaced or deleted from now on, starting with the
	// objects the table holds once the transaction commits. It needs a
	// write transaction that locked the table, so that no delete can slip
	// past the feed's registration; if that transaction aborts, the feed
	// is closed. WithCreated makes the feed tell created objects from
	// replaced ones (Change.Created).
	Changes(WriteTxn, ...FeedOption) (ChangeIterator[Obj], error)
}

// RWTable is a Table that can also be written, through a WriteTxn that
// locked it. Every write returns the object it replaced or removed, if any.
// A write that returns an error changes nothing.
type RWTable[Obj any] interface {
	Table[Obj]

	// ToTable returns the table for reading only.
	ToTable() Table[Obj]

	// Insert stores obj, replacing the object with the same primary key.
	Insert(WriteTxn, Obj) (oldObj Obj, hadOld bool, err error)
	// InsertWatch is Insert that also returns a channel that is closed
	// when the stored object is next replaced or deleted (by a later
	// commit, or by a later write in this transaction once it commits).
	InsertWatch(WriteTxn, Obj) (oldObj Obj, hadOld bool, watch <-chan struct{}, err error)
	// Modify stores obj, or, if an object with the same primary key
	// exists, merge(old, obj). merge must not change the primary key.
	Modify(txn WriteTxn, obj Obj, merge func(old, new Obj) Obj) (oldObj Obj, hadOld bool, err error)
	// CompareAndSwap stores obj if the object with its primary key is at
	// revision rev; otherwise it returns ErrRevisionNotEqual, or
	// ErrObjectNotFound if there is none.
	CompareAndSwap(txn WriteTxn, rev Revision, obj Obj) (oldObj Obj, hadOld bool, err error)
	// Delete removes the object with obj's primary key.
	Delete(WriteTxn, Obj) (oldObj Obj, hadOld bool, err error)
	// CompareAndDelete removes the object with obj's primary key if it is
	// at revision rev; otherwise it returns ErrRevisionNotEqual, or
	// ErrObjectNotFound if there is none.
	CompareAndDelete(txn WriteTxn, rev Revision, obj Obj) (oldObj Obj, hadOld bool, err error)
	// DeleteAll removes every object.
	DeleteAll(WriteTxn) error
	// DeletePrefix removes the objects Prefix(txn, q) returns, and
	// returns how many. The index queried (but an LPMIndex) loses them in
	// one cut of its tree.
	DeletePrefix(txn WriteTxn, q Query[Obj]) (int, error)
	// DeleteRange removes the objects Range(txn, from, to) returns, and
	// returns how many.
	DeleteRange(txn WriteTxn, from, to Query[Obj]) (int, error)
	// DeleteMatches removes the objects List(txn, q) returns (every
	// object with q's key in a non-unique index), and returns how many;
	// a non-unique index loses them in one cut of its tree. DeleteEach
	// removes what any read returns (an And, In or Or).
	DeleteMatches(txn WriteTxn, q Query[Obj]) (int, error)

	// RegisterInitializer records, in txn, that the table is not
	// initialized until the returned function has been called with a
	// write transaction that locked the table, and that transaction has
	// committed. Controllers wait for Initialized before trusting that the
	// table reflects the world. Calling the function again does nothing.
	//
	// Both panic if the transaction is closed or did not lock the table:
	// that is a programming error, not a condition to handle.
	RegisterInitializer(txn WriteTxn, name string) (done func(WriteTxn))
}

// tableMeta is the part of a table that does not depend on its object type.
type tableMeta struct {
	// db, pos: set once by registration. pos is the table's place in the
	// root array and in the global lock order.
	db  *DB
	pos int

	name    string
	indexes []string // primary first
	lock    tableLock
	table   TableMeta // the typed table this belongs to
	// metrics is the table's metrics handle, nil when the database's
	// metrics are NopMetrics. Set once by registration.
	metrics metrics.Table
	// feeds registers the table's change feeds.
	feeds feedRegistry
	// tip is the table's newest committed state that is not yet
	// published, nil if none; tipFailed, if set, is why tip will never be
	// published (commitqueue.go, invariants 2 and 4). Written under the
	// commit queue's mu; read by the holder of lock.
	tip       atomic.Pointer[tableStateHeader]
	tipFailed atomic.Pointer[error]
}

// indexDef is one of a table's indexes. Position 0 is the primary index.
type indexDef[Obj any] struct {
	name       string
	pos        int
	unique     bool
	fromObject func(Obj) index.KeySet
	fromString func(string) (index.Key, error)
	// keyString renders a key of the index for error messages and tools
	// (Indexer.keyString).
	keyString func(index.Key) string
	// text: fromString can parse keys (AnyTable's IndexInfo).
	text    bool
	keyType reflect.Type
	// lpm: an LPMIndex, whose keys the write path checks (lpmCheckKeys)
	// and whose reads of Containing and Prefix queries take their own
	// path (lpm_read.go).
	lpm bool
	// expiry: an ExpiryIndex, whose keys user writes check (checkExpiry).
	expiry bool
}

// object is what the index trees store: the object and the revision it was
// written at.
type object[Obj any] struct {
	obj Obj
	rev Revision
}

// tableState is a table's contents in one snapshot. Never changed once
// published.
type tableState[Obj any] struct {
	tableStateHeader
	primary   part.Tree[object[Obj]]
	secondary []part.Tree[object[Obj]]
	// multiKey has bit i set once an object with several keys in index i
	// was inserted: scans of such an index skip objects they have seen.
	multiKey uint64
	// log is the end of the table's change log (changes.go), which the
	// table keeps only while it has change feeds: the transaction that
	// opens the first feed starts it, and the first transaction after the
	// last feed closed drops it. The zero logPos without feeds.
	log  logPos[Obj]
	init *initializers
}

func (s *tableState[Obj]) tree(pos int) part.Tree[object[Obj]] {
	if pos == 0 {
		return s.primary
	}
	return s.secondary[pos-1]
}

// table implements RWTable.
type table[Obj any] struct {
	meta    tableMeta
	indexes []indexDef[Obj] // primary first
	primary Indexer[Obj]
	empty   *tableState[Obj] // the state before the first write
	// pointerObj: Obj is a pointer type, so reinserting the stored object
	// itself can be detected (ErrObjectMutated).
	pointerObj bool
	// nsec is the number of secondary indexes keyed by FromObject: the
	// first nsec of the secondary trees. byRevision: the table keeps the
	// revision index (RevisionIndex) too, as its last secondary tree.
	nsec       int
	byRevision bool
	// txn is the table's part of a write transaction, reused by every
	// transaction that locks the table. Guarded by meta.lock.
	txn tableTxn[Obj]
	// lastInitID numbers initializers. Guarded by meta.lock.
	lastInitID uint64
	// journal, if set, receives the table's changes (SetJournal). Guarded
	// by meta.lock.
	journal TableJournal[Obj]
}

// NewTable creates a table of Obj with the given primary index and secondary
// indexes, and registers it with db. Tables may be registered at any time,
// also while the database is in use.
//
// The table's name and its index names must match NamePattern; index names
// must differ from each other; the primary index must be unique. A table
// may have up to MaxSecondaryIndexes secondary indexes. The errors are
// ErrInvalidTableName, ErrDuplicateTable, ErrEmptyIndexName,
// ErrInvalidIndexName, ErrDuplicateIndex, ErrPrimaryIndexNotUnique,
// ErrPrimaryIndexLPM, ErrPrimaryIndexExpiry, ErrDuplicateExpiryIndex,
// ErrNoFromObject and ErrTooManyIndexes, wrapped with the table's name.
func NewTable[Obj any](db *DB, name TableName, primary Indexer[Obj], secondary ...Indexer[Obj]) (RWTable[Obj], error) {
	t, err := newTable(name, primary, secondary)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", name, err)
	}
	if err := db.registerTable(&t.meta, &t.empty.tableStateHeader); err != nil {
		return nil, err
	}
	return t, nil
}

// MustNewTable is NewTable that panics on error, for tables defined in
// package initialization.
func MustNewTable[Obj any](db *DB, name TableName, primary Indexer[Obj], secondary ...Indexer[Obj]) RWTable[Obj] {
	t, err := NewTable(db, name, primary, secondary...)
	if err != nil {
		panic(err)
	}
	return t
}

func newTable[Obj any](name string, primary Indexer[Obj], secondary []Indexer[Obj]) (*table[Obj], error) {
	if !nameRegexp.MatchString(name) {
		return nil, fmt.Errorf("%w: must match %s", ErrInvalidTableName, NamePattern)
	}
	if err := checkExpiryIndexes(primary, secondary); err != nil {
		return nil, err
	}
	if !primary.isUnique() {
		return nil, ErrPrimaryIndexNotUnique
	}
	if _, lpm := primary.(lpmIndexer); lpm {
		return nil, fmt.Errorf("index %q: %w", primary.indexName(), ErrPrimaryIndexLPM)
	}
	if len(secondary) > MaxSecondaryIndexes {
		return nil, fmt.Errorf("%w: %d > %d", ErrTooManyIndexes, len(secondary), MaxSecondaryIndexes)
	}
	t := &table[Obj]{
		primary:    primary,
		pointerObj: reflect.TypeFor[Obj]().Kind() == reflect.Pointer,
	}
	t.meta.name = name
	t.meta.table = t
	// The revision index, if asked for, comes after the others: the
	// write path keys it by revision, and the other indexes by their
	// FromObject (t.nsec of them).
	all := []Indexer[Obj]{primary}
	for _, ix := range secondary {
		if _, ok := ix.(revisionIndex[Obj]); !ok {
			all = append(all, ix)
		}
	}
	t.nsec = len(all) - 1
	switch len(secondary) - t.nsec {
	case 0:
	case 1:
		t.byRevision = true
		all = append(all, revisionIndex[Obj]{})
	default:
		return nil, fmt.Errorf("index %q: %w", RevisionIndexName, ErrDuplicateIndex)
	}
	for i, ix := range all {
		n := ix.indexName()
		switch {
		case n == RevisionIndexName && t.byRevision && i == len(all)-1:
			// Its name is reserved: no other index can take it.
		case n == "":
			return nil, ErrEmptyIndexName
		case !nameRegexp.MatchString(n):
			return nil, fmt.Errorf("index %q: %w: must match %s", n, ErrInvalidIndexName, NamePattern)
		}
		for _, prev := range t.meta.indexes {
			if prev == n {
				return nil, fmt.Errorf("index %q: %w", n, ErrDuplicateIndex)
			}
		}
		keys := ix.objectKeys()
		if keys == nil && n != RevisionIndexName {
			return nil, fmt.Errorf("index %q: %w", n, ErrNoFromObject)
		}
		_, lpm := ix.(lpmIndexer)
		t.meta.indexes = append(t.meta.indexes, n)
		t.indexes = append(t.indexes, indexDef[Obj]{
			name:       n,
			pos:        i,
			unique:     ix.isUnique(),
			fromObject: keys,
			fromString: ix.fromString,
			keyString:  ix.keyString,
			text:       ix.parsesText(),
			keyType:    ix.keyType(),
			lpm:        lpm,
			expiry:     isExpiryIndex(ix),
		})
	}
	t.empty = &tableState[Obj]{
		tableStateHeader: tableStateHeader{meta: &t.meta},
		primary:          part.New[object[Obj]](),
		secondary:        make([]part.Tree[object[Obj]], len(secondary)),
		init:             initialized,
	}
	for i := range secondary {
		t.empty.secondary[i] = part.New[object[Obj]]()
	}
	t.txn.t = t
	t.txn.log.feeds = &t.meta.feeds
	return t, nil
}

func (t *table[Obj]) stateStats(h *tableStateHeader) (objects int, logDeletes uint64) {
	st := (*tableState[Obj])(unsafeStatePointer(h))
	return st.primary.Len(), st.log.deletes()
}

// logged reports whether the state has a change log.
func (s *tableState[Obj]) logged() bool { return s.log.seg != nil }

func (t *table[Obj]) tableMeta() *tableMeta        { return &t.meta }
func (t *table[Obj]) Name() TableName              { return t.meta.name }
func (t *table[Obj]) DB() *DB                      { return t.meta.db }
func (t *table[Obj]) Indexes() []string            { return append([]string(nil), t.meta.indexes...) }
func (t *table[Obj]) PrimaryIndexer() Indexer[Obj] { return t.primary }
func (t *table[Obj]) ToTable() Table[Obj]          { return t }

func (t *table[Obj]) String() string { return fmt.Sprintf("Table[%s]", t.meta.name) }

// index returns the definition of the named index. Naming an index the
// table does not have is a programming error: it panics.
func (t *table[Obj]) index(name string) *indexDef[Obj] {
	// A query's name is usually the very string the table was defined
	// with (both come from the Index), so names are compared by pointer
	// and length before their bytes; the primary index's here, where the
	// call inlines.
	if d := &t.indexes[0]; unsafe.StringData(d.name) == unsafe.StringData(name) && len(d.name) == len(name) {
		return d
	}
	return t.indexByName(name)
}

// indexByName is index past the primary index's own name.
func (t *table[Obj]) indexByName(name string) *indexDef[Obj] {
	for i := 1; i < len(t.indexes); i++ { // index has tried the primary
		if d := &t.indexes[i]; unsafe.StringData(d.name) == unsafe.StringData(name) && len(d.name) == len(name) {
			return d
		}
	}
	for i := range t.indexes {
		if t.indexes[i].name == name {
			return &t.indexes[i]
		}
	}
	panic(fmt.Sprintf("strata: table %q has no index %q", t.meta.name, name))
}

// stateIn returns the table's state in the snapshot r.
func (t *table[Obj]) stateIn(r *dbRoot) *tableState[Obj] {
	h := r.tableState(&t.meta)
	if h == nil {
		return t.empty
	}
	return (*tableState[Obj])(unsafeStatePointer(h))
}

// primaryKey returns obj's primary key, appended to dst[:0]. The copy keeps
// the KeySet from escaping: one of KeySetOf's holds its key itself, and
// then neither it nor the encoder's buffer touches the heap.
func (t *table[Obj]) primaryKey(dst []byte, obj Obj) (index.Key, error) {
	keys := t.indexes[0].fromObject(obj)
	if keys.Len() != 1 {
		return nil, fmt.Errorf("table %q: index %q yielded %d keys: %w", t.meta.name, t.indexes[0].name, keys.Len(), ErrPrimaryKey)
	}
	return append(dst[:0], keys.At(0)...), nil
}
