package strata

import "iter"

// Helpers over the iterators that queries return (iter.Seq2 of objects and
// their revisions). The names are statedb's. Like the query iterators, the
// iterators they return read the same snapshot every time they run.

// Collect returns the objects of seq in order, or nil if there are none.
func Collect[Obj any](seq iter.Seq2[Obj, Revision]) []Obj {
	var objs []Obj
	for obj := range seq {
		objs = append(objs, obj)
	}
	return objs
}

// Map returns an iterator over fn(obj) for each object of seq, with the
// object's revision.
func Map[In, Out any](seq iter.Seq2[In, Revision], fn func(In) Out) iter.Seq2[Out, Revision] {
	return func(yield func(Out, Revision) bool) {
		for obj, rev := range seq {
			if !yield(fn(obj), rev) {
				return
			}
		}
	}
}

// Filter returns an iterator over the objects of seq for which keep
// returns true, with their revisions.
func Filter[Obj any](seq iter.Seq2[Obj, Revision], keep func(Obj) bool) iter.Seq2[Obj, Revision] {
	return func(yield func(Obj, Revision) bool) {
		for obj, rev := range seq {
			if keep(obj) && !yield(obj, rev) {
				return
			}
		}
	}
}

// ToSeq returns an iterator over the first element of each pair of seq:
// the objects of a query, without their revisions.
func ToSeq[A, B any](seq iter.Seq2[A, B]) iter.Seq[A] {
	return func(yield func(A) bool) {
		for a := range seq {
			if !yield(a) {
				return
			}
		}
	}
}

// Values returns an iterator over the second element of each pair of seq:
// the revisions of a query's objects.
func Values[A, B any](seq iter.Seq2[A, B]) iter.Seq[B] {
	return func(yield func(B) bool) {
		for _, b := range seq {
			if !yield(b) {
				return
			}
		}
	}
}
