package strata

// The published roots: a dbRoot is a snapshot of every table's state,
// which DB.ReadTxn loads with one atomic read and a commit replaces with
// one atomic store; a table's state in it begins with a tableStateHeader.

import (
	"fmt"
	"reflect"
	"sync"
	"unsafe"
)

// dbRoot is a published snapshot: the state of every table, by table
// position. It is never changed after publication.
//
// The n table states follow one another from first on, in the root's own
// allocation (newRoot), so a root is one allocation of 16 bytes plus a word
// per table: a commit allocates a new root, and this keeps it small.
type dbRoot struct {
	db    *DB
	n     int
	first [1]*tableStateHeader
}

// tables returns the root's table states, by table position.
func (r *dbRoot) tables() []*tableStateHeader { return unsafe.Slice(&r.first[0], r.n) }

// rootWith is a root with room for len(rest)+1 table states.
type rootWith[A any] struct {
	dbRoot
	//lint:ignore U1000 the room for the table states past first, which tables reaches through unsafe.Slice
	rest A
}

func allocRoot[A any]() *dbRoot { return &new(rootWith[A]).dbRoot }

// newRoot returns a new root holding a copy of tables.
func newRoot(db *DB, tables []*tableStateHeader) *dbRoot {
	var r *dbRoot
	// The sizes fill the allocator's size classes.
	switch n := len(tables); {
	case n <= 1:
		r = new(dbRoot)
	case n <= 2:
		r = allocRoot[[1]*tableStateHeader]()
	case n <= 4:
		r = allocRoot[[3]*tableStateHeader]()
	case n <= 6:
		r = allocRoot[[5]*tableStateHeader]()
	case n <= 10:
		r = allocRoot[[9]*tableStateHeader]()
	case n <= 14:
		r = allocRoot[[13]*tableStateHeader]()
	case n <= 18:
		r = allocRoot[[17]*tableStateHeader]()
	case n <= 30:
		r = allocRoot[[29]*tableStateHeader]()
	case n <= 62:
		r = allocRoot[[61]*tableStateHeader]()
	case n <= 126:
		r = allocRoot[[125]*tableStateHeader]()
	default:
		r = (*dbRoot)(reflect.New(largeRootType(n)).UnsafePointer())
	}
	r.db, r.n = db, len(tables)
	copy(r.tables(), tables)
	return r
}

// largeRootTypes caches largeRootType's types by size: building one
// with reflect took 7% of the CPU of a replica committing to 256 tables
// (replicate/BENCH.md).
var largeRootTypes sync.Map // int -> reflect.Type

// largeRootType returns a struct type for a root of n table states, more
// than the sizes newRoot has types for: the garbage collector sees every
// table state through the type's pointer map, as for those. A database
// has one size at a time (its table count), so the cache holds a type
// per table count the process reached.
func largeRootType(n int) reflect.Type {
	if t, ok := largeRootTypes.Load(n); ok {
		return t.(reflect.Type)
	}
	rest := reflect.ArrayOf(n-1, reflect.TypeFor[*tableStateHeader]())
	t := reflect.StructOf([]reflect.StructField{
		{Name: "Root", Type: reflect.TypeFor[dbRoot]()},
		{Name: "Rest", Type: rest},
	})
	largeRootTypes.Store(n, t)
	return t
}

func (r *dbRoot) committed() *dbRoot { return r }

func (r *dbRoot) pending() *txnCore { return nil }

// tableStateHeader is the first field of every tableState[Obj], so the root can
// hold the states of tables of different object types in one array.
type tableStateHeader struct {
	meta     *tableMeta
	revision Revision
	// lastHandle is the name of the handle whose transaction last changed
	// the table's objects or revision ("" before any).
	lastHandle string
}

// tableState returns the header of m's tableState in this snapshot, or nil if m was
// registered after the snapshot was taken.
func (r *dbRoot) tableState(m *tableMeta) *tableStateHeader {
	if m.db == r.db && m.pos < r.n {
		// r.tables()[m.pos]. (Indexing the states as one large array
		// let state inline, but checkptr, which -race turns on, rightly
		// refuses a pointer to an array larger than the root.)
		return unsafe.Slice(&r.first[0], r.n)[m.pos]
	}
	return r.stateAfter(m)
}

// stateAfter is state for a table registered after the snapshot was taken,
// or of another database.
//
//go:noinline
func (r *dbRoot) stateAfter(m *tableMeta) *tableStateHeader {
	if m.db != r.db {
		panicOtherDB(m) // both are the first handles of their databases
	}
	return nil
}

// panicOtherDB panics for a table used with a transaction of another
// database: a programming error (doc.go).
func panicOtherDB(m *tableMeta) {
	panic(fmt.Sprintf("strata: table %q used with a transaction of another DB", m.name))
}
