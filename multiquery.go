package strata

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// Queries of several indexes at once (issue 30; docs/queries.md).
//
// And, In and Or combine queries of one table, each of which selects what
// List selects for it: the objects whose key in the query's index is the
// query's key. Each returns every object once, in a defined order:
//
//   - And: the objects every query selects, in primary-key order;
//   - In: the objects any of the queries selects, all of which must be on
//     one index, in that index's order (by key, then primary key: the
//     order Range over the index gives), each object under the first of
//     the keys it has;
//   - Or: the objects any of the queries selects, on any indexes, in
//     primary-key order.
//
// The Watch forms return one channel for the whole query, which closes
// whenever its result may have changed (and may close when it did not):
//
//   - AndWatch: the channel of the input the plan starts from (the one
//     ListWatch returns for it). An object can enter, leave or change in
//     the intersection only if it is written while it is in that input,
//     before or after the write, and every such write rewrites its entry
//     under the input's key;
//   - InWatch, and OrWatch of queries on one index: the channel of the
//     index's tree node under which every entry of every key lies (the
//     node of the keys' longest common prefix; for one key, ListWatch's);
//   - OrWatch of queries on several indexes: AllWatch's, which closes on
//     any change to the table, since no one tree node holds the entries of
//     several indexes. To wait for the inputs alone, watch each with
//     ListWatch and a WatchSet.
//
// The plans (what each costs, with the benchmark that measures it):
//
//   - And counts each input (Count, O(key length)), iterates the objects of
//     the smallest, and keeps those that every other input holds, testing
//     the smaller inputs first: for a non-unique index, whether the
//     query's key is the object's key (the index's FromObject), or, if
//     objects have several keys in it, whether the object's entry under
//     the key is there; for a unique one whether the key's single object,
//     looked up once, has the object's revision. An And of a rare and a
//     common key costs about the rare key's objects, whatever the common
//     key's size (BenchmarkAnd);
//   - In reads the keys' entries one key after another, in key order;
//   - Or merges the inputs' entries, each of which is in primary-key order,
//     taking the least primary key of the inputs' heads each time: O(k) per
//     object for k inputs.
//
// Bad input is an error, never a panic, and the read returns no iterator:
// ErrNoQueries (no queries), ErrIndexNotFound (a query of an index the
// table has not), ErrInvalidQuery (a query of an LPMIndex, which selects
// by containment), ErrMixedIndexes (In's queries on different indexes),
// each wrapped with the table's name.
//
// A query names its index by name: a query made by an Index of another
// table is read as a query of the index of that name in t. Queries of
// different tables cannot be combined: And takes one table, and queries of
// another object type do not compile.

// Errors of And, In and Or, returned wrapped with the table's name.
var (
	// ErrNoQueries: And, In or Or was given no queries (an empty IN list).
	ErrNoQueries = errors.New("no queries")
	// ErrMixedIndexes: In was given queries on different indexes: its
	// keys must all be keys of one index.
	ErrMixedIndexes = errors.New("queries on different indexes")
)

// And returns the objects that every query in qs selects (each query
// selecting what List selects for it), in primary-key order, each once.
// The plan starts from the input with the fewest objects (by Count), so an
// And of a rare key and a common one costs about the rare key's objects.
// The error wraps ErrNoQueries, ErrIndexNotFound or ErrInvalidQuery (see
// above); the iterator reads the snapshot txn holds every time it runs.
func And[Obj any](txn ReadTxn, t Table[Obj], qs ...Query[Obj]) (iter.Seq2[Obj, Revision], error) {
	seq, _, err := and(txn, t, qs, false)
	return seq, err
}

// AndWatch is And with a watch channel that closes when the result may
// have changed: that of the input the plan starts from (see And).
func AndWatch[Obj any](txn ReadTxn, t Table[Obj], qs ...Query[Obj]) (iter.Seq2[Obj, Revision], <-chan struct{}, error) {
	return and(txn, t, qs, true)
}

func and[Obj any](txn ReadTxn, t Table[Obj], qs []Query[Obj], watch bool) (iter.Seq2[Obj, Revision], <-chan struct{}, error) {
	tbl := tableOf(t)
	ins, err := tbl.andPlan(txn, qs)
	if err != nil {
		return nil, nil, err
	}
	var w <-chan struct{}
	if watch {
		w = ins[0].watch()
	}
	if ins[0].n == 0 {
		return emptySeq[Obj], w, nil
	}
	return andObjects(tbl, ins), w, nil
}

// andPlan returns And's plan for qs in the state txn reads: the inputs
// with their counts, the smallest first, which the plan iterates, then
// the others in order of size, which it tests in that order (the
// likeliest to reject first).
func (t *table[Obj]) andPlan(txn ReadTxn, qs []Query[Obj]) ([]multiInput[Obj], error) {
	ins, err := t.multiInputs("And", qs)
	if err != nil {
		return nil, err
	}
	st := t.read(txn)
	for i := range ins {
		ins[i].count(st)
		ins[i].lookup = !ins[i].ix.unique && st.dedup(ins[i].ix.pos)
	}
	slices.SortStableFunc(ins, func(a, b multiInput[Obj]) int { return cmp.Compare(a.n, b.n) })
	return ins, nil
}

// multiInput is one query of And, In or Or, resolved against a table
// state by multiInputs and count.
type multiInput[Obj any] struct {
	ix *indexDef[Obj]
	// tree is the index's tree in the state read (set by count or
	// setTree); it never changes.
	tree *part.Tree[object[Obj]]
	// raw is the query's key. key is the prefix of its entries in the
	// tree: raw in a unique index; in a non-unique one raw escaped and
	// terminated, which each entry follows with its object's primary key.
	// Both are copies that the input owns.
	raw, key []byte
	// n is the number of objects the query selects (count). In a unique
	// index, rev is the revision of its one object, if n is 1.
	n   int
	rev Revision
	// lookup: And tests whether an object is in the input by a lookup of
	// its entry, not by its keys (andHolds).
	lookup bool
}

// multiInputs resolves qs against t's indexes, or returns the error that
// makes them invalid. The keys are copied (one allocation for them all):
// a key kept in place lives in the caller's Query.
func (t *table[Obj]) multiInputs(op string, qs []Query[Obj]) ([]multiInput[Obj], error) {
	if len(qs) == 0 {
		return nil, fmt.Errorf("table %q: %s: %w", t.meta.name, op, ErrNoQueries)
	}
	ins := make([]multiInput[Obj], len(qs))
	size := 0
	for i := range qs {
		ix, err := t.multiIndex(op, qs[i].index)
		if err != nil {
			return nil, err
		}
		ins[i].ix = ix
		size += 3*len(qs[i].key.bytes()) + 2 // the key, and its escaped form
	}
	buf := make([]byte, 0, size)
	for i := range qs {
		k := qs[i].key.bytes()
		s := len(buf)
		buf = append(buf, k...)
		ins[i].raw = buf[s:len(buf):len(buf)]
		ins[i].key = ins[i].raw
		if !ins[i].ix.unique {
			s = len(buf)
			buf = index.AppendEscaped(buf, k)
			ins[i].key = buf[s:len(buf):len(buf)]
		}
	}
	return ins, nil
}

// multiIndex returns the definition of the named index, or the error of a
// query on it: ErrIndexNotFound, or ErrInvalidQuery for an LPMIndex.
func (t *table[Obj]) multiIndex(op, name string) (*indexDef[Obj], error) {
	for i := range t.indexes {
		if ix := &t.indexes[i]; ix.name == name {
			if ix.lpm {
				return nil, fmt.Errorf("table %q: %s: index %q: %w: an LPM index selects by containment",
					t.meta.name, op, name, ErrInvalidQuery)
			}
			return ix, nil
		}
	}
	return nil, fmt.Errorf("table %q: %s: index %q: %w", t.meta.name, op, name, ErrIndexNotFound)
}

// setTree points the input at its index's tree in st.
func (in *multiInput[Obj]) setTree(st *tableState[Obj]) { in.tree = st.treeRef(in.ix.pos) }

// count sets the input's tree in st and counts its objects, in O(key
// length), as Count does.
func (in *multiInput[Obj]) count(st *tableState[Obj]) {
	in.setTree(st)
	if in.ix.unique {
		o, found := in.tree.Get(in.key)
		in.n, in.rev = b2i(found), o.rev
		return
	}
	in.n = in.tree.CountPrefix(in.key)
}

// watch returns the channel ListWatch returns for the input's query.
func (in *multiInput[Obj]) watch() <-chan struct{} {
	if in.ix.unique {
		_, ch, _ := in.tree.GetWatch(in.key)
		return ch
	}
	return in.tree.WatchPrefix(in.key)
}

// emptySeq is the iterator of no objects.
func emptySeq[Obj any](func(Obj, Revision) bool) {}

// andObjects returns the iterator of And's plan: the objects of ins[0]
// that every other input holds. ins[0] has at least one object, and every
// input's count (and tree) is set.
func andObjects[Obj any](t *table[Obj], ins []multiInput[Obj]) iter.Seq2[Obj, Revision] {
	return func(yield func(Obj, Revision) bool) {
		d, rest := &ins[0], ins[1:]
		var m []byte // the keys of the entries looked up, if any are
		if d.ix.unique {
			o, found := d.tree.Get(d.key)
			if !found {
				return
			}
			pk := d.key
			if d.ix.pos != 0 && slices.ContainsFunc(rest, func(in multiInput[Obj]) bool { return in.lookup }) {
				var err error
				if pk, err = t.primaryKey(nil, o.obj); err != nil {
					return // not stored: every stored object has one
				}
			}
			if andHolds(rest, o.obj, o.rev, pk, &m) {
				yield(o.obj, o.rev)
			}
			return
		}
		var it part.Iterator[object[Obj]]
		it.SetTree(*d.tree)
		it.SeekPrefix(d.key)
		if !slices.ContainsFunc(rest, func(in multiInput[Obj]) bool { return in.lookup }) {
			// No primary keys needed: the objects in batches, which
			// costs less per object than Next.
			var batch [32]object[Obj]
			for {
				n := it.NextValues(batch[:])
				for _, o := range batch[:n] {
					if andHolds(rest, o.obj, o.rev, nil, &m) && !yield(o.obj, o.rev) {
						return
					}
				}
				if n < len(batch) {
					return
				}
			}
		}
		for k, o, ok := it.Next(); ok; k, o, ok = it.Next() {
			// The entry is d.key then the object's primary key.
			if andHolds(rest, o.obj, o.rev, k[len(d.key):], &m) && !yield(o.obj, o.rev) {
				return
			}
		}
	}
}

// andHolds reports whether every input of ins selects obj, at revision
// rev and with primary key pk. *m is scratch space for entry keys.
//
//   - A unique index's one object under the key is obj if its revision is
//     rev (revisions are unique in a table, and an object's entries in
//     every index carry the same one).
//   - A non-unique index in which no object has several keys holds obj
//     under the key if the key is obj's key in the index: its FromObject
//     is evaluated, which the write path already relies on giving the
//     same keys for the same object. That is cheaper than a lookup of the
//     entry in the index (2.7 times with integer keys, 1.5 times with
//     string keys in BenchmarkAnd: docs/queries.md).
//   - A non-unique index in which an object has several keys (lookup
//     set): the entry of the key and pk is looked up. Such an index's
//     FromObject builds a set of keys, which costs more than the lookup
//     (bench/compare's And_Tags: docs/queries.md).
func andHolds[Obj any](ins []multiInput[Obj], obj Obj, rev Revision, pk []byte, m *[]byte) bool {
	for i := range ins {
		in := &ins[i]
		switch {
		case in.ix.unique:
			if in.rev != rev {
				return false
			}
		case in.lookup:
			*m = append(append((*m)[:0], in.key...), pk...)
			if _, found := in.tree.Get(*m); !found {
				return false
			}
		default:
			if keys := in.ix.fromObject(obj); !keys.Contains(in.raw) {
				return false
			}
		}
	}
	return true
}
