package strata

// The model of indexes and queries for TestModel (model_test.go): a
// table state as Go maps (mdlState), each index as entries sorted by Go
// values (mdlIdx, never by the index encodings), and the random queries
// of every kind (Get, List, Prefix, LowerBound, Range, reverse, watch)
// with what each must return.

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"slices"
)

// mdlEnt is an object as a query returns it: the object and its revision.
type mdlEnt[Obj any] struct {
	obj Obj
	rev Revision
}

// mdlState is the model of one table in one snapshot. A state that was
// committed (or captured by a snapshot) is never changed again, except for
// its caches; a write transaction works on a clone.
type mdlState[Obj comparable, PK cmp.Ordered] struct {
	objs map[PK]mdlEnt[Obj]
	rev  Revision
	// logLen is the length of the table's history (mdlTable.hist) in this
	// state: the changes that led to it.
	logLen int
	// indexed: the table keeps its change log, which it does only while
	// it has change feeds; chain numbers the log (a new one each time the
	// table starts one), 0 without.
	indexed bool
	chain   int
	// changed: the transaction changed the primary index (a change went
	// to the history), which replaces its root; cleared on publish.
	changed bool
	// revRoot identifies the root of the primary index tree, whose
	// channel Next returns: it changes with the revision.
	revRoot int
	// pub numbers the committed states of the table in commit order.
	pub int
	// Caches, rebuilt on demand after each change: the objects in primary
	// key order, and per index its entries sorted by (key, primary key).
	all   []mdlEnt[Obj]
	views []any
}

func (s *mdlState[Obj, PK]) clone() *mdlState[Obj, PK] {
	return &mdlState[Obj, PK]{objs: maps.Clone(s.objs), rev: s.rev, logLen: s.logLen, indexed: s.indexed, chain: s.chain,
		revRoot: s.revRoot, views: make([]any, len(s.views))}
}

func (s *mdlState[Obj, PK]) touch() {
	s.all = nil
	clear(s.views)
}

// mdlQuery is one query, run against the table and against the model.
type mdlQuery[Obj comparable, PK cmp.Ordered] struct {
	desc func() string
	// exact: a Get or List query, whose watch channel must close exactly
	// when its result changes (if the key exists when it is taken).
	exact bool
	want  func(st *mdlState[Obj, PK]) []mdlEnt[Obj]
	run   func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] // appends to dst[:0]
	watch func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{})
	// del, for List, Prefix and Range, deletes what the query returns.
	del func(txn WriteTxn) (int, error)
}

// mdlIndex is the model of one index of a table.
type mdlIndex[Obj comparable, PK cmp.Ordered] interface {
	unique() bool
	// conflict reports whether an object other than pk holds one of obj's
	// keys (for a unique index).
	conflict(st *mdlState[Obj, PK], pk PK, obj Obj) bool
	// queries yields random queries of every kind on the index.
	queries(r *rand.Rand, st *mdlState[Obj, PK], yield func(mdlQuery[Obj, PK]))
}

// mdlIdx models an index with keys of the Go type K.
type mdlIdx[Obj comparable, PK, K cmp.Ordered] struct {
	tbl    *mdlTable[Obj, PK]
	pos    int
	ix     Index[Obj, K]
	keysOf func(Obj) []K
	// keyGen returns a random key, which may or may not be in the index.
	keyGen func(r *rand.Rand) K
	fmtKey func(K) string
	// multi: an object may have several keys.
	multi bool
	// emptyKey is the key whose encoding is empty, if there is one.
	emptyKey *K
	// prefix, if set, returns a random prefix query, the smallest key that
	// matches it, and whether a key matches it. The keys that match form a
	// contiguous run in key order.
	prefix func(r *rand.Rand) (q Query[Obj], desc func() string, low K, match func(K) bool)
}

type mdlIE[Obj any, PK, K cmp.Ordered] struct {
	k  K
	pk PK
	e  mdlEnt[Obj]
}

func (x *mdlIdx[Obj, PK, K]) unique() bool { return x.ix.Unique }

func (x *mdlIdx[Obj, PK, K]) entries(st *mdlState[Obj, PK]) []mdlIE[Obj, PK, K] {
	if v := st.views[x.pos]; v != nil {
		return v.([]mdlIE[Obj, PK, K])
	}
	var es []mdlIE[Obj, PK, K]
	for pk, e := range st.objs {
		ks := x.keysOf(e.obj)
		slices.Sort(ks)
		for _, k := range slices.Compact(ks) {
			es = append(es, mdlIE[Obj, PK, K]{k, pk, e})
		}
	}
	slices.SortFunc(es, func(a, b mdlIE[Obj, PK, K]) int {
		return cmp.Or(cmp.Compare(a.k, b.k), cmp.Compare(a.pk, b.pk))
	})
	st.views[x.pos] = es
	return es
}

func (x *mdlIdx[Obj, PK, K]) conflict(st *mdlState[Obj, PK], pk PK, obj Obj) bool {
	for _, k := range x.keysOf(obj) {
		for opk, e := range st.objs {
			if opk != pk && slices.Contains(x.keysOf(e.obj), k) {
				return true
			}
		}
	}
	return false
}

// lowerIdx returns the position of the first entry with key >= k.
func (x *mdlIdx[Obj, PK, K]) lowerIdx(es []mdlIE[Obj, PK, K], k K) int {
	i, _ := slices.BinarySearchFunc(es, k, func(e mdlIE[Obj, PK, K], k K) int { return cmp.Compare(e.k, k) })
	return i
}

// upperIdx returns the position of the first entry with key > k.
func (x *mdlIdx[Obj, PK, K]) upperIdx(es []mdlIE[Obj, PK, K], k K) int {
	i := x.lowerIdx(es, k)
	for i < len(es) && es[i].k == k {
		i++
	}
	return i
}

// collect returns the objects of es[lo:hi] (in reverse if asked), each
// once: an object with several keys in the range comes at its first one.
// multi: an object may have several entries.
func mdlCollect[Obj any, PK, K cmp.Ordered](es []mdlIE[Obj, PK, K], lo, hi int, reverse, multi bool) []mdlEnt[Obj] {
	if lo >= hi {
		return nil
	}
	out := make([]mdlEnt[Obj], 0, hi-lo)
	var seen map[PK]bool
	if multi {
		seen = make(map[PK]bool, hi-lo)
	}
	add := func(e mdlIE[Obj, PK, K]) {
		if !multi || !seen[e.pk] {
			if multi {
				seen[e.pk] = true
			}
			out = append(out, e.e)
		}
	}
	if reverse {
		for i := hi - 1; i >= lo; i-- {
			add(es[i])
		}
	} else {
		for i := lo; i < hi; i++ {
			add(es[i])
		}
	}
	return out
}

// list returns the objects with key k, in primary key order.
func (x *mdlIdx[Obj, PK, K]) list(st *mdlState[Obj, PK], k K) []mdlEnt[Obj] {
	es := x.entries(st)
	return mdlCollect(es, x.lowerIdx(es, k), x.upperIdx(es, k), false, x.multi)
}

func mdlKeyDesc[K any](fk func(K) string, k K, isNil bool) string {
	if isNil {
		return "nil"
	}
	return fk(k)
}

func mdlFirst[Obj any](es []mdlEnt[Obj]) []mdlEnt[Obj] {
	if len(es) > 1 {
		return es[:1]
	}
	return es
}

func mdlSeq[Obj any](seq iter.Seq2[Obj, Revision]) []mdlEnt[Obj] {
	var out []mdlEnt[Obj]
	for o, rev := range seq {
		out = append(out, mdlEnt[Obj]{o, rev})
	}
	return out
}

func mdlSeqTo[Obj any](dst []mdlEnt[Obj], seq iter.Seq2[Obj, Revision]) []mdlEnt[Obj] {
	dst = dst[:0]
	for o, rev := range seq {
		dst = append(dst, mdlEnt[Obj]{o, rev})
	}
	return dst
}

func mdlGotTo[Obj any](dst []mdlEnt[Obj], obj Obj, rev Revision, found bool) []mdlEnt[Obj] {
	if !found {
		return dst[:0]
	}
	return append(dst[:0], mdlEnt[Obj]{obj, rev})
}

func mdlGot[Obj any](obj Obj, rev Revision, found bool) []mdlEnt[Obj] {
	if !found {
		return nil
	}
	return []mdlEnt[Obj]{{obj, rev}}
}

// randKey returns an existing key of the index half of the time, and a
// random one (maybe absent) otherwise.
func (x *mdlIdx[Obj, PK, K]) randKey(r *rand.Rand, es []mdlIE[Obj, PK, K]) K {
	if len(es) > 0 && r.IntN(2) == 0 {
		return es[r.IntN(len(es))].k
	}
	return x.keyGen(r)
}

func (x *mdlIdx[Obj, PK, K]) queries(r *rand.Rand, st *mdlState[Obj, PK], yield func(mdlQuery[Obj, PK])) {
	tbl := x.tbl.tbl
	es := x.entries(st)
	name := x.ix.Name
	fk := x.fmtKey
	// Get and List watches close exactly on changes of their result only
	// on unique indexes (see Table); on non-unique ones they may also
	// close on nearby changes.
	exact := x.ix.Unique

	// Get and List, on a key that is there (if any) and on a random one.
	keys := []K{x.keyGen(r)}
	if len(es) > 0 {
		keys = append(keys, es[r.IntN(len(es))].k)
	}
	for _, k := range keys {
		q := x.ix.Query(k)
		yield(mdlQuery[Obj, PK]{
			desc:  func() string { return fmt.Sprintf("Get(%s=%s)", name, fk(k)) },
			exact: exact,
			want:  func(st *mdlState[Obj, PK]) []mdlEnt[Obj] { return mdlFirst(x.list(st, k)) },
			run: func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] {
				o, rev, found := tbl.Get(txn, q)
				return mdlGotTo(dst, o, rev, found)
			},
			watch: func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{}) {
				o, rev, w, found := tbl.GetWatch(txn, q)
				return mdlGot(o, rev, found), w
			},
		})
		yield(mdlQuery[Obj, PK]{
			desc:  func() string { return fmt.Sprintf("List(%s=%s)", name, fk(k)) },
			exact: exact,
			want:  func(st *mdlState[Obj, PK]) []mdlEnt[Obj] { return x.list(st, k) },
			run:   func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] { return mdlSeqTo(dst, tbl.List(txn, q)) },
			watch: func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{}) {
				seq, w := tbl.ListWatch(txn, q)
				return mdlSeq(seq), w
			},
			del: func(txn WriteTxn) (int, error) { return tbl.DeleteMatches(txn, q) },
		})
	}

	if x.prefix != nil {
		q, desc, low, match := x.prefix(r)
		span := func(st *mdlState[Obj, PK]) ([]mdlIE[Obj, PK, K], int, int) {
			es := x.entries(st)
			lo := x.lowerIdx(es, low)
			hi := lo
			for hi < len(es) && match(es[hi].k) {
				hi++
			}
			return es, lo, hi
		}
		yield(mdlQuery[Obj, PK]{
			desc: func() string { return fmt.Sprintf("Prefix(%s=%s)", name, desc()) },
			want: func(st *mdlState[Obj, PK]) []mdlEnt[Obj] {
				es, lo, hi := span(st)
				return mdlCollect(es, lo, hi, false, x.multi)
			},
			run: func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] { return mdlSeqTo(dst, tbl.Prefix(txn, q)) },
			watch: func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{}) {
				seq, w := tbl.PrefixWatch(txn, q)
				return mdlSeq(seq), w
			},
			del: func(txn WriteTxn) (int, error) { return tbl.DeletePrefix(txn, q) },
		})
		yield(mdlQuery[Obj, PK]{
			desc: func() string { return fmt.Sprintf("ReversePrefix(%s=%s)", name, desc()) },
			want: func(st *mdlState[Obj, PK]) []mdlEnt[Obj] {
				es, lo, hi := span(st)
				return mdlCollect(es, lo, hi, true, x.multi)
			},
			run: func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] { return mdlSeqTo(dst, tbl.ReversePrefix(txn, q)) },
			watch: func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{}) {
				seq, w := tbl.ReversePrefixWatch(txn, q)
				return mdlSeq(seq), w
			},
		})
	}

	// Scans from the empty key, given as a nil key (QueryKey(nil), or
	// index.Bytes of an empty slice): it is below every key.
	nilKey := r.IntN(8) == 0
	k := x.randKey(r, es)
	q := x.ix.Query(k)
	if nilKey {
		q = x.ix.QueryKey(nil)
	}
	yield(mdlQuery[Obj, PK]{
		desc: func() string { return fmt.Sprintf("LowerBound(%s=%s)", name, mdlKeyDesc(fk, k, nilKey)) },
		want: func(st *mdlState[Obj, PK]) []mdlEnt[Obj] {
			es := x.entries(st)
			lo := 0
			if !nilKey {
				lo = x.lowerIdx(es, k)
			}
			return mdlCollect(es, lo, len(es), false, x.multi)
		},
		run: func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] { return mdlSeqTo(dst, tbl.LowerBound(txn, q)) },
		watch: func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{}) {
			seq, w := tbl.LowerBoundWatch(txn, q)
			return mdlSeq(seq), w
		},
	})
	k2 := x.randKey(r, es)
	q2 := x.ix.Query(k2)
	if nilKey {
		q2 = x.ix.QueryKey(nil)
	}
	yield(mdlQuery[Obj, PK]{
		desc: func() string { return fmt.Sprintf("ReverseLowerBound(%s=%s)", name, mdlKeyDesc(fk, k2, nilKey)) },
		want: func(st *mdlState[Obj, PK]) []mdlEnt[Obj] {
			es := x.entries(st)
			var hi int
			switch {
			case !nilKey:
				hi = x.upperIdx(es, k2)
			case x.emptyKey != nil:
				// Only the key that is empty too.
				hi = x.upperIdx(es, *x.emptyKey)
			}
			return mdlCollect(es, 0, hi, true, x.multi)
		},
		run: func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] {
			return mdlSeqTo(dst, tbl.ReverseLowerBound(txn, q2))
		},
		watch: func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{}) {
			seq, w := tbl.ReverseLowerBoundWatch(txn, q2)
			return mdlSeq(seq), w
		},
	})
	from, to := x.randKey(r, es), x.randKey(r, es)
	if r.IntN(4) != 0 && from > to {
		from, to = to, from
	}
	qf, qt := x.ix.Query(from), x.ix.Query(to)
	if nilKey {
		qf = x.ix.QueryKey(nil)
	}
	between := func(st *mdlState[Obj, PK]) ([]mdlIE[Obj, PK, K], int, int) {
		es := x.entries(st)
		lo := 0
		if !nilKey {
			lo = x.lowerIdx(es, from)
		}
		return es, lo, x.lowerIdx(es, to)
	}
	yield(mdlQuery[Obj, PK]{
		desc: func() string {
			return fmt.Sprintf("Range(%s=%s..%s)", name, mdlKeyDesc(fk, from, nilKey), fk(to))
		},
		want: func(st *mdlState[Obj, PK]) []mdlEnt[Obj] {
			es, lo, hi := between(st)
			return mdlCollect(es, lo, hi, false, x.multi)
		},
		run: func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] { return mdlSeqTo(dst, tbl.Range(txn, qf, qt)) },
		watch: func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{}) {
			seq, w := tbl.RangeWatch(txn, qf, qt)
			return mdlSeq(seq), w
		},
		del: func(txn WriteTxn) (int, error) { return tbl.DeleteRange(txn, qf, qt) },
	})
	yield(mdlQuery[Obj, PK]{
		desc: func() string {
			return fmt.Sprintf("ReverseRange(%s=%s..%s)", name, mdlKeyDesc(fk, from, nilKey), fk(to))
		},
		want: func(st *mdlState[Obj, PK]) []mdlEnt[Obj] {
			es, lo, hi := between(st)
			return mdlCollect(es, lo, hi, true, x.multi)
		},
		run: func(txn ReadTxn, dst []mdlEnt[Obj]) []mdlEnt[Obj] {
			return mdlSeqTo(dst, tbl.ReverseRange(txn, qf, qt))
		},
		watch: func(txn ReadTxn) ([]mdlEnt[Obj], <-chan struct{}) {
			seq, w := tbl.ReverseRangeWatch(txn, qf, qt)
			return mdlSeq(seq), w
		},
	})
}
