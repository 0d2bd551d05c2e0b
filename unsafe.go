package strata

import (
	"unsafe"

	"github.com/strata-db/strata/part"
)

// unsafeStatePointer converts a table state header to a pointer to the
// tableState it is the first field of. The header's meta field identifies
// the table, and a table's object type never changes, so the caller knows
// the type.
func unsafeStatePointer(h *tableStateHeader) unsafe.Pointer { return unsafe.Pointer(h) }

// samePointer reports whether a and b, which must be of a pointer type, are
// the same pointer.
func samePointer[Obj any](a, b *Obj) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(a)) == *(*unsafe.Pointer)(unsafe.Pointer(b))
}

// pairTree returns tree as a tree of part.Pair, so that a scan can hand its
// objects and revisions to the caller's loop with part.YieldPairs.
// object[Obj] and part.Pair[Obj, Revision] are structs of the same field
// types in the same order, so their layout is the same (TestPairLayout),
// and a Tree's own fields do not depend on its value type.
func pairTree[Obj any](tree part.Tree[object[Obj]]) part.Tree[part.Pair[Obj, Revision]] {
	return *(*part.Tree[part.Pair[Obj, Revision]])(unsafe.Pointer(&tree))
}
