package strata

import (
	"bytes"
	"fmt"
	"iter"
	"slices"

	"github.com/strata-db/strata/part"
)

// The unions of several queries: In (keys of one index, in the index's
// order) and Or (queries of any indexes, in primary-key order). See
// multiquery.go for what they return and their watch channels.

// In returns the objects that any query in qs selects (each query
// selecting what List selects for it), where every query is on one index:
// an IN list of keys. The objects come in the index's order, by key and
// then primary key (Range's order), each once, under the first of the
// keys it has; repeated keys count once. The error wraps ErrNoQueries (an
// empty list), ErrMixedIndexes (queries on different indexes),
// ErrIndexNotFound or ErrInvalidQuery (see And).
func In[Obj any](txn ReadTxn, t Table[Obj], qs ...Query[Obj]) (iter.Seq2[Obj, Revision], error) {
	seq, _, err := inList(txn, t, qs, false)
	return seq, err
}

// InWatch is In with a watch channel that closes when the result may have
// changed: that of the index's tree node under which every key's entries
// lie (for one key, ListWatch's).
func InWatch[Obj any](txn ReadTxn, t Table[Obj], qs ...Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}, error) {
	return inList(txn, t, qs, true)
}

func inList[Obj any](txn ReadTxn, t Table[Obj], qs []Query[Obj], watch bool) (iter.Seq2[Obj, Revision], <-chan struct{}, error) {
	tbl := tableOf(t)
	ins, err := tbl.multiInputs("In", qs)
	if err != nil {
		return nil, nil, err
	}
	for i := range ins {
		if ins[i].ix != ins[0].ix {
			return nil, nil, fmt.Errorf("table %q: In: %w: %q and %q", tbl.meta.name, ErrMixedIndexes, ins[0].ix.name, ins[i].ix.name)
		}
	}
	st := tbl.read(txn)
	for i := range ins {
		ins[i].setTree(st)
	}
	slices.SortFunc(ins, func(a, b multiInput[Obj]) int { return bytes.Compare(a.raw, b.raw) })
	ins = slices.CompactFunc(ins, func(a, b multiInput[Obj]) bool { return bytes.Equal(a.raw, b.raw) })
	var w <-chan struct{}
	if watch {
		w = unionWatch(ins)
	}
	return inObjects(ins, st.dedup(ins[0].ix.pos)), w, nil
}

// unionWatch returns the channel of the node of the inputs' index tree
// under which every input's entries lie: ListWatch's for one input, else
// the node of the longest prefix common to the inputs' entry prefixes.
// Every input is on one index.
func unionWatch[Obj any](ins []multiInput[Obj]) <-chan struct{} {
	if len(ins) == 1 {
		return ins[0].watch()
	}
	p := ins[0].key
	for i := 1; i < len(ins); i++ {
		p = p[:commonPrefixLen(p, ins[i].key)]
	}
	return ins[0].tree.WatchPrefix(p)
}

// inObjects returns the iterator of In: the entries of each input in turn.
// ins are on one index, with distinct keys in ascending order; dedup: an
// object may have several keys in the index, and is returned under the
// first of them only.
func inObjects[Obj any](ins []multiInput[Obj], dedup bool) iter.Seq2[Obj, Revision] {
	return func(yield func(Obj, Revision) bool) {
		for i := range ins {
			in := &ins[i]
			if in.ix.unique {
				if o, found := in.tree.Get(in.key); found && !(dedup && hasEarlierKey(ins[:i], o.obj)) {
					if !yield(o.obj, o.rev) {
						return
					}
				}
				continue
			}
			var it part.Iterator[object[Obj]]
			it.SetTree(*in.tree)
			it.SeekPrefix(in.key)
			for _, o, ok := it.Next(); ok; _, o, ok = it.Next() {
				if dedup && hasEarlierKey(ins[:i], o.obj) {
					continue
				}
				if !yield(o.obj, o.rev) {
					return
				}
			}
		}
	}
}

// hasEarlierKey reports whether obj has in the index one of the keys of
// earlier, which are sorted: In returned it under that key already.
func hasEarlierKey[Obj any](earlier []multiInput[Obj], obj Obj) bool {
	if len(earlier) == 0 {
		return false
	}
	keys := earlier[0].ix.fromObject(obj)
	for j := range keys.Len() {
		if _, found := slices.BinarySearchFunc(earlier, []byte(keys.At(j)), func(in multiInput[Obj], k []byte) int {
			return bytes.Compare(in.raw, k)
		}); found {
			return true
		}
	}
	return false
}

// Or returns the objects that any query in qs selects (each query
// selecting what List selects for it), on any of the table's indexes, in
// primary-key order, each once. The error wraps ErrNoQueries,
// ErrIndexNotFound or ErrInvalidQuery (see And).
func Or[Obj any](txn ReadTxn, t Table[Obj], qs ...Query[Obj]) (iter.Seq2[Obj, Revision], error) {
	seq, _, err := or(txn, t, qs, false)
	return seq, err
}

// OrWatch is Or with a watch channel that closes when the result may have
// changed: for queries on one index, InWatch's; for queries on several,
// AllWatch's, which closes on any change to the table.
func OrWatch[Obj any](txn ReadTxn, t Table[Obj], qs ...Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}, error) {
	return or(txn, t, qs, true)
}

func or[Obj any](txn ReadTxn, t Table[Obj], qs []Query[Obj], watch bool) (iter.Seq2[Obj, Revision], <-chan struct{}, error) {
	tbl := tableOf(t)
	ins, err := tbl.multiInputs("Or", qs)
	if err != nil {
		return nil, nil, err
	}
	st := tbl.read(txn)
	oneIndex := true
	for i := range ins {
		ins[i].setTree(st)
		oneIndex = oneIndex && ins[i].ix == ins[0].ix
	}
	var w <-chan struct{}
	switch {
	case !watch:
	case oneIndex:
		w = unionWatch(ins)
	default:
		w = st.primary.RootWatch()
	}
	return orObjects(tbl, ins), w, nil
}

// orCursor is one input of Or's merge: its next object and that object's
// primary key, if ok.
type orCursor[Obj any] struct {
	in  *multiInput[Obj]
	it  part.Iterator[object[Obj]] // a non-unique index's entries
	pk  []byte
	obj object[Obj]
	ok  bool
}

// next moves c to its input's next object. A unique index's input has one
// object at most, which the first call finds.
func (c *orCursor[Obj]) next(t *table[Obj], first bool) {
	in := c.in
	if !in.ix.unique {
		if first {
			c.it.SetTree(*in.tree)
			c.it.SeekPrefix(in.key)
		}
		var k []byte
		k, c.obj, c.ok = c.it.Next()
		if c.ok {
			c.pk = k[len(in.key):] // the entry is in.key then the primary key
		}
		return
	}
	c.ok = false
	if !first {
		return
	}
	if c.obj, c.ok = in.tree.Get(in.key); c.ok && in.ix.pos == 0 {
		c.pk = in.key
	} else if c.ok {
		var err error
		c.pk, err = t.primaryKey(nil, c.obj.obj)
		c.ok = err == nil // every stored object has one
	}
}

// orObjects returns the iterator of Or: a merge of the inputs' entries,
// each input's in primary-key order, that takes the least primary key of
// the inputs' next objects each time and moves every input at that key
// past it.
func orObjects[Obj any](t *table[Obj], ins []multiInput[Obj]) iter.Seq2[Obj, Revision] {
	return func(yield func(Obj, Revision) bool) {
		cs := make([]orCursor[Obj], len(ins))
		for i := range cs {
			cs[i].in = &ins[i]
			cs[i].next(t, true)
		}
		for {
			var least *orCursor[Obj]
			for i := range cs {
				if c := &cs[i]; c.ok && (least == nil || bytes.Compare(c.pk, least.pk) < 0) {
					least = c
				}
			}
			if least == nil {
				return
			}
			pk, o := least.pk, least.obj
			for i := range cs {
				if c := &cs[i]; c.ok && bytes.Equal(c.pk, pk) {
					c.next(t, false)
				}
			}
			if !yield(o.obj, o.rev) {
				return
			}
		}
	}
}
