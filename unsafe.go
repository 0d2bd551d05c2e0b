package strata

import "unsafe"

// unsafeStatePointer converts a table state header to a pointer to the
// tableState it is the first field of. The header's meta field identifies
// the table, and a table's object type never changes, so the caller knows
// the type.
func unsafeStatePointer(h *stateHeader) unsafe.Pointer { return unsafe.Pointer(h) }

// samePointer reports whether a and b, which must be of a pointer type, are
// the same pointer.
func samePointer[Obj any](a, b *Obj) bool {
	return *(*unsafe.Pointer)(unsafe.Pointer(a)) == *(*unsafe.Pointer)(unsafe.Pointer(b))
}
