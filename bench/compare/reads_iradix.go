package main

import (
	"sync/atomic"
	"testing"

	iradix "github.com/hashicorp/go-immutable-radix/v2"
	"github.com/strata-db/strata/index"
)

// iradixReads is the floor of the read workloads: the objects table as a
// user would hand-build it on bare go-immutable-radix/v2 trees, one per
// index, published together through an atomic pointer (a read transaction
// is one atomic load, as in Strata and statedb).
//
//   - The primary tree maps the 8-byte big-endian ID (index.Uint64's
//     encoding) to the object; the tags tree maps tag, 0x00, ID to it, so
//     that a tag's objects are the keys with the prefix tag, 0x00 (tags here
//     hold no 0x00).
//   - Query keys are encoded into a buffer the reader owns, so they cost no
//     allocation; scans use Root().Iterator() and its Seek methods, which
//     allocate the iterator and its stack, because iradix offers nothing
//     else.
//   - There are no revisions, watch channels or write transactions over
//     several indexes: what a database adds on top of the tree is what the
//     ratio to this column measures.
type iradixReads struct {
	root atomic.Pointer[iradixSnapshot]
	r    iradixR
}

type iradixSnapshot struct {
	primary, tags *iradix.Tree[*Object]
}

type iradixR struct {
	s   *iradixSnapshot
	key []byte // query key buffer
}

func newIradixReads(b *testing.B, objs []*Object) Reads {
	primary := iradix.New[*Object]().Txn()
	tags := iradix.New[*Object]().Txn()
	for _, o := range objs {
		primary.Insert(index.Uint64(o.ID), o)
		for _, t := range o.Tags {
			tags.Insert(index.AppendUint64(append([]byte(t), 0), o.ID), o)
		}
	}
	a := &iradixReads{r: iradixR{key: make([]byte, 0, 64)}}
	a.root.Store(&iradixSnapshot{primary: primary.Commit(), tags: tags.Commit()})
	if n := a.root.Load().primary.Len(); n != len(objs) {
		fatalf(b, "iradix: %d objects, want %d", n, len(objs))
	}
	return a
}

func (a *iradixReads) ReadTxn() Reader {
	a.r.s = a.root.Load()
	return &a.r
}

func (r *iradixR) Get(id uint64) (*Object, bool) {
	r.key = index.AppendUint64(r.key[:0], id)
	return r.s.primary.Get(r.key)
}

func (r *iradixR) ScanFrom(id uint64, n int) (res Result) {
	r.key = index.AppendUint64(r.key[:0], id)
	it := r.s.primary.Root().Iterator()
	it.SeekLowerBound(r.key)
	// The count is checked before each Next, so the scan reads exactly n
	// objects, as Strata's and statedb's loops do (they break after the
	// n-th): a loop that called Next for the n+1-th would pay for one more.
	for res.N < n {
		_, o, ok := it.Next()
		if !ok {
			break
		}
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *iradixR) All() (res Result) {
	it := r.s.primary.Root().Iterator()
	for _, o, ok := it.Next(); ok; _, o, ok = it.Next() {
		res.N++
		res.Sum += o.ID
	}
	return res
}

func (r *iradixR) ListByTag(tag string) (res Result) {
	r.key = append(append(r.key[:0], tag...), 0)
	it := r.s.tags.Root().Iterator()
	it.SeekPrefix(r.key)
	for _, o, ok := it.Next(); ok; _, o, ok = it.Next() {
		res.N++
		res.Sum += o.ID
	}
	return res
}
