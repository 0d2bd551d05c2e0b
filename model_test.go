package strata

// A model-based test: random sequences of operations over several tables,
// each checked after every step against a simple model made of Go maps and
// slices sorted by Go values (never by the index encodings). Change feeds
// and the graveyard are modelled in changes_model_test.go.
//
// Flags:
//
//	-strata.model.seed N   replay a run (the seed is logged)
//	-strata.model.steps N  number of operations (default 100k, 10k with -short)
//	-strata.model.long     ten times the default number of operations

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"iter"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

var (
	mdlSeedFlag  = flag.Uint64("strata.model.seed", 0, "seed of TestModel (0: random)")
	mdlStepsFlag = flag.Int("strata.model.steps", 0, "operations TestModel runs (0: default)")
	mdlLongFlag  = flag.Bool("strata.model.long", false, "run TestModel ten times longer")
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

// mdlLogEnt is a change in a table's history.
type mdlLogEnt[Obj any, PK any] struct {
	pk      PK
	obj     Obj
	rev     Revision
	deleted bool
	created bool // an insert under a new key, or a restore
}

// mdlInsertWatch is a channel from InsertWatch in the open transaction.
type mdlInsertWatch[Obj any] struct {
	ch  <-chan struct{}
	ent mdlEnt[Obj]
}

// mdlTable is the model of one table: its committed state, and its pending
// state in the open write transaction.
type mdlTable[Obj comparable, PK cmp.Ordered] struct {
	create     func(*DB) (RWTable[Obj], error)
	tbl        RWTable[Obj]
	pointerObj bool // Obj is a pointer: reinserting the stored one fails
	pkOf       func(Obj) PK
	pkGen      func(r *rand.Rand) PK
	gen        func(r *rand.Rand, pk PK) Obj
	// merge combines two objects with the same primary key into a new one.
	merge func(old, new Obj) Obj
	// changePK returns a copy of obj with another primary key.
	changePK func(obj Obj) Obj
	// stealUnique, if set, returns a copy of obj that takes victim's keys
	// in the unique secondary indexes.
	stealUnique func(obj, victim Obj) Obj
	fmtObj      func(Obj) string
	indexes     []mdlIndex[Obj, PK] // the primary first

	committed *mdlState[Obj, PK]
	pending   *mdlState[Obj, PK] // nil until the open transaction writes
	// hist is every change made to the table, in order: the committed
	// ones (up to committed.logLen), then the open transaction's.
	hist   []mdlLogEnt[Obj, PK]
	chains int // numbers the change logs
	// journaled: the table is attached to the run's journal; written: the
	// open transaction changed the table's objects or revision, which
	// the journal records.
	journaled, written bool
	locked             bool // locked by the open transaction
	insWatch           map[PK]mdlInsertWatch[Obj]
	buf                []mdlEnt[Obj] // scratch space for query results

	// Change feeds (changes_model_test.go).
	feeds []*mdlFeed[Obj, PK] // the live ones
	// touched: the open transaction called a write method of the table
	// (which begins its write state); observed: deletes in the open
	// transaction go to the change log (the table had feeds when it was
	// first touched, or one was registered in the transaction).
	touched, observed bool
	// gy lists the revisions of the deletes logged in the committed
	// state, gyPending in the open transaction (nil while unchanged): the
	// graveyard is those some live feed has not passed.
	gy, gyPending []Revision
	// dead lists the feeds closed by the abort of their registering
	// transaction and not closed since (kept reachable, so that their
	// cleanup does not run at a random moment).
	dead []*mdlFeed[Obj, PK]
	// dropLogAtUnlock: the last feed was released while the open
	// transaction held the table's lock; the change log (and the
	// graveyard in it) is dropped when the transaction unlocks it.
	// wasLocked: the transaction that just ended locked the table; ended
	// says how it ended.
	dropLogAtUnlock bool
	wasLocked       bool
	ended           string
	// lastFeedGone is the length of hist when the last feed was released
	// in the open transaction after it began the table's write state with
	// a change log (the trial's case 1, changes_model_test.go), or -1.
	lastFeedGone int
	feedSeq      int // numbers the feeds, for messages
	revRoots     int // numbers the primary index roots
	pubs         int // numbers the committed states
}

func (mt *mdlTable[Obj, PK]) meta() TableMeta { return mt.tbl }
func (mt *mdlTable[Obj, PK]) isLocked() bool  { return mt.locked }

func (mt *mdlTable[Obj, PK]) register(db *DB) error {
	tbl, err := mt.create(db)
	if err != nil {
		return err
	}
	mt.tbl = tbl
	mt.committed = mt.emptyState().(*mdlState[Obj, PK])
	mt.insWatch = map[PK]mdlInsertWatch[Obj]{}
	mt.feeds, mt.dead, mt.gy, mt.gyPending, mt.dropLogAtUnlock = nil, nil, nil, nil, false
	mt.hist, mt.chains, mt.journaled = nil, 0, false
	return nil
}

func (mt *mdlTable[Obj, PK]) emptyState() any {
	return &mdlState[Obj, PK]{objs: map[PK]mdlEnt[Obj]{}, views: make([]any, len(mt.indexes))}
}

// view is the state reads through the open transaction see.
func (mt *mdlTable[Obj, PK]) view() *mdlState[Obj, PK] {
	if mt.pending != nil {
		return mt.pending
	}
	return mt.committed
}

func (mt *mdlTable[Obj, PK]) committedState() any { return mt.committed }
func (mt *mdlTable[Obj, PK]) viewState() any      { return mt.view() }

func (mt *mdlTable[Obj, PK]) begin(locked bool) {
	mt.pending, mt.locked, mt.written = nil, locked, false
	mt.touched, mt.observed, mt.gyPending = false, false, nil
	mt.lastFeedGone = -1
}

func (mt *mdlTable[Obj, PK]) commit(m *mdlRun) {
	mt.feedsCommit(m)
	mt.wasLocked = mt.locked
	mt.pending, mt.locked = nil, false
	for pk, iw := range mt.insWatch {
		m.addWatch(&mdlWatch{
			desc:  fmt.Sprintf("%s: InsertWatch(%v)", mt.tbl.Name(), pk),
			ch:    iw.ch,
			exact: true,
			changed: func() bool {
				e, ok := mt.committed.objs[pk]
				return !ok || e != iw.ent
			},
		})
	}
	clear(mt.insWatch)
}

func (mt *mdlTable[Obj, PK]) abort(m *mdlRun) {
	if mt.lastFeedGone >= 0 && len(mt.hist)-mt.lastFeedGone > 2*changeLogSegment {
		// The trial's case 1, ended by Abort or a failed commit.
		m.stats["Abort.afterLastFeedInLongTxn"]++
	}
	mt.wasLocked = mt.locked
	mt.pending, mt.locked = nil, false
	clear(mt.hist[mt.committed.logLen:])
	mt.hist = mt.hist[:mt.committed.logLen]
	// What InsertWatch watched was never committed: its channel closed.
	for pk, iw := range mt.insWatch {
		if !mdlClosed(iw.ch) {
			m.fatalf("%s: InsertWatch(%v) in an aborted transaction: the channel is open", mt.tbl.Name(), pk)
		}
	}
	clear(mt.insWatch)
	mt.feedsAborted(m)
}

// write returns the pending state, cloned from the committed one on the
// transaction's first write.
func (mt *mdlTable[Obj, PK]) write() *mdlState[Obj, PK] {
	if mt.pending == nil {
		mt.pending = mt.committed.clone()
	}
	mt.pending.touch()
	return mt.pending
}

func (mt *mdlTable[Obj, PK]) put(pk PK, obj Obj) {
	st := mt.write()
	st.rev++
	_, had := st.objs[pk]
	st.objs[pk] = mdlEnt[Obj]{obj, st.rev}
	mt.logChange(st, mdlLogEnt[Obj, PK]{pk, obj, st.rev, false, !had})
}

func (mt *mdlTable[Obj, PK]) del(pk PK) {
	st := mt.write()
	st.rev++
	obj := st.objs[pk].obj
	delete(st.objs, pk)
	mt.logChange(st, mdlLogEnt[Obj, PK]{pk, obj, st.rev, true, false})
	if mt.observed {
		mt.gyPending = append(mt.graveyard(), st.rev)
	}
}

// logChange appends a change of the pending state st to the history.
func (mt *mdlTable[Obj, PK]) logChange(st *mdlState[Obj, PK], e mdlLogEnt[Obj, PK]) {
	mt.hist = append(mt.hist, e)
	st.logLen, st.changed = len(mt.hist), true
	mt.written = true
}

// touch models the table's write state beginning in the open transaction
// (its first write, or Changes): deletes go to the graveyard if the table
// has feeds, and the change log is started or dropped to match.
func (mt *mdlTable[Obj, PK]) touch() {
	if mt.touched {
		return
	}
	mt.touched = true
	mt.observed = len(mt.feeds) > 0
	if mt.view().indexed != mt.observed {
		mt.setIndexed(mt.observed)
	}
}

func (mt *mdlTable[Obj, PK]) setIndexed(v bool) {
	st := mt.write()
	st.indexed, st.chain = v, 0
	if v {
		mt.chains++
		st.chain = mt.chains
	}
}

// publish makes the pending state and graveyard the committed ones.
func (mt *mdlTable[Obj, PK]) publish() {
	if mt.gyPending != nil {
		mt.gy, mt.gyPending = mt.gyPending, nil
	}
	p := mt.pending
	if p == nil {
		return
	}
	if p.changed {
		mt.revRoots++
		p.revRoot = mt.revRoots
	}
	p.changed = false
	mt.pubs++
	p.pub = mt.pubs
	mt.committed, mt.pending = p, nil
}

// graveyard is the model of the logged deletes the open transaction sees.
func (mt *mdlTable[Obj, PK]) graveyard() []Revision {
	if mt.gyPending != nil {
		return mt.gyPending
	}
	return slices.Clip(mt.gy)
}

// conflict reports whether obj (with primary key pk) clashes with another
// object in a unique secondary index.
func (mt *mdlTable[Obj, PK]) conflict(st *mdlState[Obj, PK], pk PK, obj Obj) bool {
	for _, x := range mt.indexes[1:] {
		if x.unique() && x.conflict(st, pk, obj) {
			return true
		}
	}
	return false
}

// upsertErr predicts the error of storing obj over old.
func (mt *mdlTable[Obj, PK]) upsertErr(st *mdlState[Obj, PK], pk PK, obj Obj, old mdlEnt[Obj], hadOld bool) error {
	if hadOld && mt.pointerObj && old.obj == obj {
		return ErrObjectMutated
	}
	if mt.conflict(st, pk, obj) {
		return ErrUniqueConstraint
	}
	return nil
}

// randomPK returns the primary key of an existing object most of the time.
func (mt *mdlTable[Obj, PK]) randomPK(r *rand.Rand, st *mdlState[Obj, PK]) PK {
	if len(st.objs) > 0 && r.IntN(3) != 0 {
		all := mt.all(st)
		return mt.pkOf(all[r.IntN(len(all))].obj)
	}
	return mt.pkGen(r)
}

func (mt *mdlTable[Obj, PK]) all(st *mdlState[Obj, PK]) []mdlEnt[Obj] {
	if st.all == nil {
		pks := slices.Sorted(maps.Keys(st.objs))
		st.all = make([]mdlEnt[Obj], len(pks))
		for i, pk := range pks {
			st.all[i] = st.objs[pk]
		}
	}
	return st.all
}

func (mt *mdlTable[Obj, PK]) fmtEnts(es []mdlEnt[Obj]) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s@%d", mt.fmtObj(e.obj), e.rev)
	}
	b.WriteByte(']')
	return b.String()
}

// expectWrite checks the result of a write against the model's prediction.
func (mt *mdlTable[Obj, PK]) expectWrite(m *mdlRun, op string, wantErr error, wantOld mdlEnt[Obj], wantHad bool, gotOld Obj, gotHad bool, err error) {
	m.t.Helper()
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			m.fatalf("%s: %s: err = %v, want %v", mt.tbl.Name(), op, err, wantErr)
		}
		return
	}
	if err != nil {
		m.fatalf("%s: %s: unexpected error %v", mt.tbl.Name(), op, err)
	}
	if gotHad != wantHad || (wantHad && gotOld != wantOld.obj) {
		m.fatalf("%s: %s: returned old (%s, %v), want (%s, %v)", mt.tbl.Name(), op,
			mt.fmtObj(gotOld), gotHad, mt.fmtObj(wantOld.obj), wantHad)
	}
}

// writeOp runs one random write on the table in txn and applies it to the
// model. If the table is not locked, the write must fail and change nothing.
func (mt *mdlTable[Obj, PK]) writeOp(m *mdlRun, txn WriteTxn) (op string) {
	r := m.r
	tbl := mt.tbl
	if !mt.locked {
		obj := mt.gen(r, mt.pkGen(r))
		var err error
		op := "Insert"
		switch r.IntN(3) {
		case 0:
			_, _, err = tbl.Insert(txn, obj)
		case 1:
			op = "Delete"
			_, _, err = tbl.Delete(txn, obj)
		case 2:
			op = "DeleteAll"
			err = tbl.DeleteAll(txn)
		}
		if !errors.Is(err, ErrTableNotLockedForWriting) {
			m.fatalf("%s: %s on a table not locked: err = %v", tbl.Name(), op, err)
		}
		return "NotLocked." + op
	}

	// Every operation but "nop" calls a write method of the table, which
	// begins its write state: the graveyard takes deletes if the table
	// has feeds then.
	if !mt.touched {
		mt.observed = len(mt.feeds) > 0
	}
	defer func() {
		if op != "nop" {
			mt.touch()
		}
	}()
	st := mt.view()
	n := r.IntN(100)
	switch {
	case n < 30: // Insert, new or replacing
		pk := mt.randomPK(r, st)
		obj := mt.gen(r, pk)
		old, had := st.objs[pk]
		wantErr := mt.upsertErr(st, pk, obj, old, had)
		var gotOld Obj
		var gotHad bool
		var err error
		var ch <-chan struct{}
		useWatch := r.IntN(8) == 0
		if useWatch {
			gotOld, gotHad, ch, err = tbl.InsertWatch(txn, obj)
		} else {
			gotOld, gotHad, err = tbl.Insert(txn, obj)
		}
		mt.expectWrite(m, "Insert", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, obj)
			if useWatch {
				if ch == nil {
					m.fatalf("%s: InsertWatch returned no channel", tbl.Name())
				}
				mt.insWatch[pk] = mdlInsertWatch[Obj]{ch, mt.pending.objs[pk]}
			}
		}
		return fmt.Sprintf("Insert(%s) -> %v", mt.fmtObj(obj), err)

	case n < 36: // Insert taking another object's unique keys
		if mt.stealUnique == nil || len(st.objs) < 2 {
			return "nop"
		}
		all := mt.all(st)
		victim := all[r.IntN(len(all))].obj
		pk := mt.randomPK(r, st)
		obj := mt.stealUnique(mt.gen(r, pk), victim)
		old, had := st.objs[pk]
		wantErr := mt.upsertErr(st, pk, obj, old, had)
		gotOld, gotHad, err := tbl.Insert(txn, obj)
		mt.expectWrite(m, "Insert(steal)", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, obj)
		}
		return fmt.Sprintf("Insert(steal %s) -> %v", mt.fmtObj(obj), err)

	case n < 46: // Modify
		pk := mt.randomPK(r, st)
		obj := mt.gen(r, pk)
		old, had := st.objs[pk]
		changePK := r.IntN(8) == 0
		var merged Obj
		calls := 0
		merge := func(o, n Obj) Obj {
			calls++
			if o != old.obj || n != obj {
				m.fatalf("%s: Modify: merge called with (%s, %s), want (%s, %s)", tbl.Name(),
					mt.fmtObj(o), mt.fmtObj(n), mt.fmtObj(old.obj), mt.fmtObj(obj))
			}
			merged = mt.merge(o, n)
			if changePK {
				merged = mt.changePK(merged)
			}
			return merged
		}
		gotOld, gotHad, err := tbl.Modify(txn, obj, merge)
		if want := mdlB2i(had); calls != want {
			m.fatalf("%s: Modify: merge called %d times, want %d", tbl.Name(), calls, want)
		}
		stored := obj
		var wantErr error
		if had {
			stored = merged
			if changePK {
				wantErr = ErrPrimaryKeyChanged
			}
		}
		if wantErr == nil {
			wantErr = mt.upsertErr(st, pk, stored, old, had)
		}
		mt.expectWrite(m, "Modify", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, stored)
		}
		return fmt.Sprintf("Modify(%s) -> %v", mt.fmtObj(obj), err)

	case n < 58: // CompareAndSwap: right, wrong or missing
		pk := mt.randomPK(r, st)
		obj := mt.gen(r, pk)
		old, had := st.objs[pk]
		rev := old.rev
		if r.IntN(3) == 0 {
			rev = st.rev + 1 - Revision(r.IntN(3))
		}
		var wantErr error
		switch {
		case !had:
			wantErr = ErrObjectNotFound
		case rev != old.rev:
			wantErr = ErrRevisionNotEqual
		default:
			wantErr = mt.upsertErr(st, pk, obj, old, had)
		}
		gotOld, gotHad, err := tbl.CompareAndSwap(txn, rev, obj)
		mt.expectWrite(m, "CompareAndSwap", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, obj)
		}
		return fmt.Sprintf("CompareAndSwap(%d, %s) -> %v", rev, mt.fmtObj(obj), err)

	case n < 72: // Delete, of the stored object or of a copy with its key
		pk := mt.randomPK(r, st)
		old, had := st.objs[pk]
		obj := mt.gen(r, pk)
		if had && r.IntN(2) == 0 {
			obj = old.obj
		}
		gotOld, gotHad, err := tbl.Delete(txn, obj)
		mt.expectWrite(m, "Delete", nil, old, had, gotOld, gotHad, err)
		if had {
			mt.del(pk)
		}
		return fmt.Sprintf("Delete(%v) -> %v", pk, had)

	case n < 82: // CompareAndDelete: right, wrong or missing
		pk := mt.randomPK(r, st)
		old, had := st.objs[pk]
		obj := mt.gen(r, pk)
		rev := old.rev
		if r.IntN(3) == 0 {
			rev = Revision(r.IntN(int(st.rev) + 2))
		}
		var wantErr error
		switch {
		case !had:
			wantErr = ErrObjectNotFound
		case rev != old.rev:
			wantErr = ErrRevisionNotEqual
		}
		gotOld, gotHad, err := tbl.CompareAndDelete(txn, rev, obj)
		mt.expectWrite(m, "CompareAndDelete", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.del(pk)
		}
		return fmt.Sprintf("CompareAndDelete(%d, %v) -> %v", rev, pk, err)

	case n < 84: // DeleteAll
		if r.IntN(3) != 0 {
			return "nop"
		}
		if err := tbl.DeleteAll(txn); err != nil {
			m.fatalf("%s: DeleteAll: %v", tbl.Name(), err)
		}
		// One revision per deleted object, in primary key order, as if
		// deleted one by one.
		for _, e := range slices.Clone(mt.all(st)) {
			mt.del(mt.pkOf(e.obj))
		}
		return "DeleteAll"

	case n < 88: // reinsert the stored object itself
		if !mt.pointerObj || len(st.objs) == 0 {
			return "nop"
		}
		all := mt.all(st)
		e := all[r.IntN(len(all))]
		_, _, err := tbl.Insert(txn, e.obj)
		mt.expectWrite(m, "Insert(stored)", ErrObjectMutated, e, true, e.obj, true, err)
		return "Insert(stored) -> " + fmt.Sprint(err)

	case n < 91: // a long run of inserts and deletes: several log segments
		return mt.bulk(m, txn, changeLogSegment+r.IntN(3*changeLogSegment))

	case n < 94: // Restore, into the table emptied first
		return mt.restoreOp(m, txn)

	case n < 97: // DeletePrefix, DeleteRange or DeleteMatches
		x := mt.indexes[r.IntN(len(mt.indexes))]
		var qs []mdlQuery[Obj, PK]
		x.queries(r, st, func(q mdlQuery[Obj, PK]) {
			if q.del != nil {
				qs = append(qs, q)
			}
		})
		q := qs[r.IntN(len(qs))]
		want := q.want(st)
		got, err := q.del(txn)
		if err != nil || got != len(want) {
			m.fatalf("%s: Delete of %s = (%d, %v), want %d (%s)", tbl.Name(), q.desc(), got, err, len(want), mt.fmtEnts(want))
		}
		for _, e := range want {
			mt.del(mt.pkOf(e.obj))
		}
		return fmt.Sprintf("Delete of %s -> %d", q.desc(), got)

	default: // reads through the transaction, checked below
		return "nop"
	}
}

// bulk makes k inserts and deletes in txn, which locked the table.
func (mt *mdlTable[Obj, PK]) bulk(m *mdlRun, txn WriteTxn, k int) string {
	r, tbl := m.r, mt.tbl
	for range k {
		pk := mt.pkGen(r)
		old, had := mt.view().objs[pk]
		if had && r.IntN(3) == 0 {
			gotOld, gotHad, err := tbl.Delete(txn, old.obj)
			mt.expectWrite(m, "Delete(bulk)", nil, old, true, gotOld, gotHad, err)
			mt.del(pk)
			continue
		}
		obj := mt.gen(r, pk)
		wantErr := mt.upsertErr(mt.view(), pk, obj, old, had)
		gotOld, gotHad, err := tbl.Insert(txn, obj)
		mt.expectWrite(m, "Insert(bulk)", wantErr, old, had, gotOld, gotHad, err)
		if wantErr == nil {
			mt.put(pk, obj)
		}
	}
	return fmt.Sprintf("Bulk(%d writes)", k)
}

// restoreOp empties the table (DeleteAll) if it is not empty, and restores
// a few objects into it at revisions of their own, some below the table's.
func (mt *mdlTable[Obj, PK]) restoreOp(m *mdlRun, txn WriteTxn) string {
	r := m.r
	tbl := mt.tbl
	if st := mt.view(); len(st.objs) > 0 {
		if err := tbl.DeleteAll(txn); err != nil {
			m.fatalf("%s: DeleteAll: %v", tbl.Name(), err)
		}
		for _, e := range slices.Clone(mt.all(st)) {
			mt.del(mt.pkOf(e.obj))
		}
	}
	// Objects with distinct keys and revisions, none clashing in a unique
	// index (Restore refuses those, and then the transaction must abort).
	st := mt.write()
	trial := st.clone()
	var objs []mdlEnt[Obj]
	revs := map[Revision]bool{}
	for range 1 + r.IntN(5) {
		pk := mt.pkGen(r)
		obj := mt.gen(r, pk)
		rev := Revision(1 + r.IntN(int(st.rev)+10))
		if _, dup := trial.objs[pk]; dup || revs[rev] || mt.conflict(trial, pk, obj) {
			continue
		}
		revs[rev] = true
		trial.objs[pk] = mdlEnt[Obj]{obj, rev}
		trial.touch()
		objs = append(objs, mdlEnt[Obj]{obj, rev})
	}
	revision := Revision(r.IntN(int(st.rev) + 5))
	err := Restore(txn, tbl, func(yield func(Obj, Revision) bool) {
		for _, e := range objs {
			if !yield(e.obj, e.rev) {
				return
			}
		}
	}, revision)
	if err != nil {
		m.fatalf("%s: Restore: %v", tbl.Name(), err)
	}
	// The change log has them in revision order.
	slices.SortFunc(objs, func(a, b mdlEnt[Obj]) int { return cmp.Compare(a.rev, b.rev) })
	maxRev := revision
	for _, e := range objs {
		pk := mt.pkOf(e.obj)
		st.objs[pk] = e
		mt.logChange(st, mdlLogEnt[Obj, PK]{pk, e.obj, e.rev, false, true})
		maxRev = max(maxRev, e.rev)
	}
	st.rev = max(st.rev, maxRev)
	st.touch()
	mt.written = true
	return fmt.Sprintf("Restore(%d objects, revision %d)", len(objs), revision)
}

func mdlDesc(s string) func() string { return func() string { return s } }

func mdlB2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// check compares what the table returns through txn with the model state
// st: its size, revision and contents, and if full, random queries of
// every kind on every index.
func (mt *mdlTable[Obj, PK]) check(m *mdlRun, txn ReadTxn, sta any, where string, full bool) {
	st := sta.(*mdlState[Obj, PK])
	tbl := mt.tbl
	if n := tbl.NumObjects(txn); n != len(st.objs) {
		m.fatalf("%s: %s: NumObjects = %d, want %d", where, tbl.Name(), n, len(st.objs))
	}
	if rev := tbl.Revision(txn); rev != st.rev {
		m.fatalf("%s: %s: Revision = %d, want %d", where, tbl.Name(), rev, st.rev)
	}
	all := mt.all(st)
	mt.buf = mdlSeqTo(mt.buf, tbl.All(txn))
	mt.expect(m, where, mdlDesc("All"), mt.buf, all)
	if !full {
		return
	}
	mt.buf = mdlSeqTo(mt.buf, tbl.ReverseAll(txn))
	mt.expect(m, where, mdlDesc("ReverseAll"), mt.buf, slices.Backward(all))
	for _, x := range mt.indexes {
		x.queries(m.r, st, func(q mdlQuery[Obj, PK]) {
			mt.buf = q.run(txn, mt.buf)
			mt.expect(m, where, q.desc, mt.buf, q.want(st))
		})
	}
}

// expect compares a query result with the model's.
func (mt *mdlTable[Obj, PK]) expect(m *mdlRun, where string, desc func() string, got []mdlEnt[Obj], want any) {
	var w []mdlEnt[Obj]
	switch want := want.(type) {
	case []mdlEnt[Obj]:
		w = want
	case iter.Seq2[int, mdlEnt[Obj]]:
		for _, e := range want {
			w = append(w, e)
		}
	}
	if !slices.Equal(got, w) {
		m.fatalf("%s: %s: %s:\n got  %s\n want %s", where, mt.tbl.Name(), desc(), mt.fmtEnts(got), mt.fmtEnts(w))
	}
}

// takeWatch runs a random query with a watch channel on txn (whose model
// state is st) and registers the channel.
func (mt *mdlTable[Obj, PK]) takeWatch(m *mdlRun, txn ReadTxn, sta any, where string) {
	st := sta.(*mdlState[Obj, PK])
	r := m.r
	tbl := mt.tbl
	if r.IntN(8) == 0 {
		var seq iter.Seq2[Obj, Revision]
		var ch <-chan struct{}
		desc := "AllWatch"
		want := mt.all(st)
		base := want // the state's cache: replaced, never changed, by later writes
		if r.IntN(2) == 0 {
			seq, ch = tbl.AllWatch(txn)
		} else {
			desc = "ReverseAllWatch"
			seq, ch = tbl.ReverseAllWatch(txn)
			want = slices.Collect(mdlValues(slices.Backward(want)))
		}
		mt.expect(m, where, mdlDesc(desc), mdlSeq(seq), want)
		m.addWatch(&mdlWatch{
			desc:       fmt.Sprintf("%s: %s (%s)", tbl.Name(), desc, where),
			ch:         ch,
			throughTxn: txn == m.txn,
			txn:        m.txn,
			changed: func() bool {
				return !slices.Equal(mt.all(mt.committed), base)
			},
		})
		return
	}
	x := mt.indexes[r.IntN(len(mt.indexes))]
	var qs []mdlQuery[Obj, PK]
	x.queries(r, st, func(q mdlQuery[Obj, PK]) { qs = append(qs, q) })
	q := qs[r.IntN(len(qs))]
	got, ch := q.watch(txn)
	want := q.want(st)
	mt.expect(m, where, func() string { return q.desc() + " (watch)" }, got, want)
	m.addWatch(&mdlWatch{
		desc:       fmt.Sprintf("%s: %s (%s)", tbl.Name(), q.desc(), where),
		ch:         ch,
		exact:      q.exact && len(want) > 0,
		throughTxn: txn == m.txn,
		txn:        m.txn,
		changed: func() bool {
			return !slices.Equal(q.want(mt.committed), want)
		},
	})
}

func mdlValues[K, V any](seq iter.Seq2[K, V]) iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, v := range seq {
			if !yield(v) {
				return
			}
		}
	}
}

// mdlTableI is a table model of any object type.
type mdlTableI interface {
	meta() TableMeta
	isLocked() bool
	register(db *DB) error
	emptyState() any
	committedState() any
	viewState() any
	begin(locked bool)
	commit(m *mdlRun)
	abort(m *mdlRun)
	// released follows commit or abort: the table is unlocked.
	released(m *mdlRun)
	writeOp(m *mdlRun, txn WriteTxn) string
	check(m *mdlRun, txn ReadTxn, st any, where string, full bool)
	takeWatch(m *mdlRun, txn ReadTxn, st any, where string)
	// attach attaches the table to the run's journal.
	attach(m *mdlRun)
	// journalWrite reports whether the open transaction's commit writes
	// the table to the journal.
	journalWrite() bool
	// feedOp runs a random change feed operation (changes_model_test.go).
	feedOp(m *mdlRun, i int)
	// endFeeds closes or drops every feed, and checks that the table
	// then keeps neither deleted objects nor its revision index.
	endFeeds(m *mdlRun)
	// dropDeadWatches forgets the watch channels of feeds closed by an
	// abort.
	dropDeadWatches(m *mdlRun)
}

// mdlWatch is a watch channel and the query it came from.
type mdlWatch struct {
	desc string
	ch   <-chan struct{}
	// exact: the channel must stay open while the result is unchanged.
	exact bool
	// changed reports whether the query's result on the latest committed
	// state differs from the result when the channel was taken.
	changed func() bool
	// owner, if set, is the change feed whose Next returned the channel:
	// the channel is forgotten when the feed is closed.
	owner any
	// throughTxn: taken through the open write transaction, on its
	// uncommitted state. Its channel may close at the transaction's end
	// without a change (its later writes replace what it watched), must
	// close if the transaction aborts and the result differs from the
	// committed one, and is never closed before the transaction ends.
	throughTxn bool
	txn        WriteTxn
}

// pending reports whether w was taken through the write transaction that
// is still open: it is checked once that ends.
func (m *mdlRun) pending(w *mdlWatch) bool { return w.throughTxn && m.txn != nil && w.txn == m.txn }

// mdlSnap is a read transaction kept for later checks, with the model
// state of every table it must see.
type mdlSnap struct {
	txn    ReadTxn
	states []any
	desc   string
}

// state returns the model state of table i in the snapshot: empty if the
// table was registered after it.
func (s *mdlSnap) state(m *mdlRun, i int) any {
	if i < len(s.states) {
		return s.states[i]
	}
	return m.tables[i].emptyState()
}

// mdlDeferred is an iterator kept to be run later: it must still return
// what the model said when it was created.
type mdlDeferred struct {
	run   func() error
	desc  string
	steps int
}

type mdlRun struct {
	t      *testing.T
	seed   uint64
	r      *rand.Rand
	step   int
	last   []string // the latest operations, for failure reports
	db     *DB
	tables []mdlTableI

	journal  *mdlJournal // some tables are attached to it
	txn      WriteTxn
	txnDesc  string
	txnSnap  mdlSnap // what the open transaction started from
	watches  []*mdlWatch
	snaps    []mdlSnap
	deferred []mdlDeferred
	// releasing: waitReleased is consuming the deferred sequences.
	releasing bool

	stats map[string]int
}

func (m *mdlRun) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("seed %d (rerun with -strata.model.seed=%d), step %d: %s\nlatest operations:\n  %s",
		m.seed, m.seed, m.step, fmt.Sprintf(format, args...), strings.Join(m.last, "\n  "))
}

func (m *mdlRun) log(op string) {
	kind := op
	if _, rest, ok := strings.Cut(op, ": "); ok {
		kind = rest // without the table's name
	}
	m.stats[strings.FieldsFunc(kind+" ", func(c rune) bool { return c == '(' || c == ' ' })[0]]++
	if len(m.last) == 12 {
		m.last = m.last[1:]
	}
	m.last = append(m.last, fmt.Sprintf("%d: %s", m.step, op))

}

func (m *mdlRun) addWatch(w *mdlWatch) {
	if w.ch == nil {
		m.fatalf("%s: nil watch channel", w.desc)
	}
	if w.throughTxn {
		if mdlClosed(w.ch) {
			m.fatalf("%s: watch taken through the open write transaction is closed", w.desc)
		}
		m.watches = append(m.watches, w)
		return
	}
	if w.changed() {
		// Taken on an old snapshot whose result is already out of date:
		// the channel must be closed already.
		if !mdlClosed(w.ch) {
			m.fatalf("%s: watch taken on an outdated snapshot is open", w.desc)
		}
		return
	}
	if mdlClosed(w.ch) {
		// Taken on an old snapshot whose nodes a later commit replaced.
		if w.exact {
			m.fatalf("%s: result unchanged but the watch channel is closed", w.desc)
		}
		return
	}
	m.watches = append(m.watches, w)
}

func mdlClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// checkWatchesCommitted checks every watch after a commit: closed if its
// query's result changed, open if it did not and the watch is exact.
func (m *mdlRun) checkWatchesCommitted() {
	kept := m.watches[:0]
	for _, w := range m.watches {
		if m.pending(w) {
			kept = append(kept, w)
			continue
		}
		closed, changed := mdlClosed(w.ch), w.changed()
		switch {
		case changed && !closed:
			m.fatalf("%s: result changed but the watch channel is open", w.desc)
		case !changed && closed && w.exact && !w.throughTxn:
			m.fatalf("%s: result unchanged but the watch channel was closed", w.desc)
		case !closed:
			kept = append(kept, w)
		}
	}
	clear(m.watches[len(kept):])
	m.watches = kept
}

// checkWatchesAborted checks every watch after an abort: closed exactly if
// its result changed (the feeds registered in the transaction ended, or the
// graveyard collection that followed changed the table), else open.
func (m *mdlRun) checkWatchesAborted() {
	kept := m.watches[:0]
	for _, w := range m.watches {
		if m.pending(w) {
			kept = append(kept, w)
			continue
		}
		closed, changed := mdlClosed(w.ch), w.changed()
		switch {
		case changed && !closed:
			m.fatalf("%s: result changed but the watch channel is open", w.desc)
		case !changed && closed && !w.throughTxn:
			m.fatalf("%s: watch channel closed by Abort", w.desc)
		case !closed:
			kept = append(kept, w)
		}
	}
	clear(m.watches[len(kept):])
	m.watches = kept
}

// checkWatchesOpen checks that no watch channel closed: nothing was
// committed since they were checked.
func (m *mdlRun) checkWatchesOpen(why string) {
	for _, w := range m.watches {
		if mdlClosed(w.ch) {
			m.fatalf("%s: watch channel closed by %s", w.desc, why)
		}
	}
}

func (m *mdlRun) states(view bool) []any {
	out := make([]any, len(m.tables))
	for i, mt := range m.tables {
		if view {
			out[i] = mt.viewState()
		} else {
			out[i] = mt.committedState()
		}
	}
	return out
}

func (m *mdlRun) addSnap(txn ReadTxn, states []any, desc string) {
	if len(m.snaps) == 8 {
		m.snaps = slices.Delete(m.snaps, 0, 1)
	}
	m.snaps = append(m.snaps, mdlSnap{txn, states, fmt.Sprintf("%s (step %d)", desc, m.step)})
}

// addDeferred keeps an All iterator of a random table on txn, to run it a
// few steps later.
func (m *mdlRun) addDeferred(txn ReadTxn, states []any) {
	i := m.r.IntN(len(m.tables))
	mt := m.tables[i]
	run := mt.(interface {
		deferredAll(txn ReadTxn, st any) func() error
	}).deferredAll(txn, states[i])
	m.deferred = append(m.deferred, mdlDeferred{run, fmt.Sprintf("%s All from step %d", mt.meta().Name(), m.step), 2 + m.r.IntN(20)})
}

func (mt *mdlTable[Obj, PK]) deferredAll(txn ReadTxn, sta any) func() error {
	st := sta.(*mdlState[Obj, PK])
	seq := mt.tbl.All(txn)
	want := slices.Clone(mt.all(st))
	return func() error {
		if got := mdlSeq(seq); !slices.Equal(got, want) {
			return fmt.Errorf("got %s, want %s", mt.fmtEnts(got), mt.fmtEnts(want))
		}
		return nil
	}
}

func (m *mdlRun) runDeferred() {
	// A run may defer more (a Next in the loop body of a range over a
	// feed's sequence): those are kept after the ones not due.
	due := m.deferred
	m.deferred = nil
	var kept []mdlDeferred
	for _, d := range due {
		if d.steps--; d.steps > 0 {
			kept = append(kept, d)
			continue
		}
		if err := d.run(); err != nil {
			m.fatalf("kept iterator %s: %v", d.desc, err)
		}
	}
	m.deferred = append(kept, m.deferred...) // what the others hold may be collected
}

// beginTxn opens a write transaction over random tables, or over table
// only if it is not negative.
func (m *mdlRun) beginTxn(only int) {
	r := m.r
	n := 1 + r.IntN(len(m.tables))
	perm := r.Perm(len(m.tables))[:n]
	if only >= 0 {
		n, perm = 1, []int{only}
	}
	var metas []TableMeta
	var names []string
	locked := make([]bool, len(m.tables))
	for _, i := range perm {
		locked[i] = true
		metas = append(metas, m.tables[i].meta())
		names = append(names, m.tables[i].meta().Name())
	}
	if r.IntN(5) == 0 { // a table twice
		i := perm[r.IntN(n)]
		metas = append(metas, m.tables[i].meta())
		names = append(names, m.tables[i].meta().Name())
	}
	r.Shuffle(len(metas), func(i, j int) { metas[i], metas[j] = metas[j], metas[i] })
	m.txn = m.db.WriteTxn(metas[0], metas[1:]...)
	m.txnSnap = mdlSnap{m.txn, m.states(false), fmt.Sprintf("open WriteTxn (step %d)", m.step)}
	for i, mt := range m.tables {
		mt.begin(locked[i])
	}
	m.txnDesc = strings.Join(names, ",")
	m.log("WriteTxn(" + m.txnDesc + ")")
}

// commit commits the open transaction, which now and then the journal
// fails.
func (m *mdlRun) commit() { m.commitJournal(m.r.IntN(10) == 0) }

// commitJournal commits the open transaction, with a journal that fails
// it if fail is set: then nothing is published, as after Abort, if the
// transaction wrote a table attached to it.
func (m *mdlRun) commitJournal(fail bool) {
	txn := m.txn
	wantErr := false
	for _, mt := range m.tables {
		wantErr = wantErr || (fail && mt.journalWrite())
	}
	m.journal.fail = fail
	rtxn, err := txn.Commit()
	m.journal.fail = false
	if wantErr {
		if !errors.Is(err, errMdlJournal) {
			m.fatalf("Commit with a failing journal: err = %v", err)
		}
		m.log("Commit(" + m.txnDesc + ") -> journal failed")
		m.stats["Commit.journalFailed"]++
		// The transaction reads the latest committed state from now on:
		// of the tables it did not lock, what committed since it began
		// (a change log dropped when their last feed closed).
		m.aborted(txn, m.states(false))
		return
	}
	if err != nil {
		m.fatalf("Commit: %v", err)
	}
	for _, mt := range m.tables {
		mt.commit(m)
	}
	states := m.states(false) // what Commit published
	for _, mt := range m.tables {
		mt.released(m)
	}
	m.txn = nil
	m.log("Commit(" + m.txnDesc + ")")
	for i, mt := range m.tables {
		mt.check(m, rtxn, states[i], "ReadTxn from Commit", true)
	}
	m.checkWatchesCommitted()
	m.addSnap(txn, states, "committed WriteTxn")
	if _, err := txn.Commit(); !errors.Is(err, ErrTransactionClosed) {
		m.fatalf("second Commit: err = %v", err)
	}
}

func (m *mdlRun) abort() {
	m.txn.Abort()
	m.log("Abort(" + m.txnDesc + ")")
	m.aborted(m.txn, nil)
}

// aborted models the end of the open transaction txn without a commit: by
// Abort, or by a Commit that the journal failed. states is what txn reads
// after that, if not what it started from.
func (m *mdlRun) aborted(txn WriteTxn, states []any) {
	snap := m.txnSnap // what the transaction started from
	if states != nil {
		snap.states = states
	}
	for _, mt := range m.tables {
		mt.abort(m)
	}
	for _, mt := range m.tables {
		mt.released(m)
	}
	m.txn = nil
	m.checkWatchesAborted()
	for _, mt := range m.tables {
		mt.dropDeadWatches(m)
	}
	m.addSnap(txn, snap.states, "aborted WriteTxn")
	txn.Abort() // again: does nothing
	for i, mt := range m.tables {
		mt.check(m, txn, snap.state(m, i), "aborted WriteTxn", false)
	}
}

// errMdlJournal is the error of the model's journal when told to fail.
var errMdlJournal = errors.New("model journal fails")

// mdlJournal is a Journal that records nothing, and fails commits while
// fail is set.
type mdlJournal struct{ fail bool }

type mdlJournalBatch struct{ j *mdlJournal }

func (j *mdlJournal) Begin() JournalBatch { return mdlJournalBatch{j} }

func (b mdlJournalBatch) Commit() error {
	if b.j.fail {
		return errMdlJournal
	}
	return nil
}

func (b mdlJournalBatch) Discard() {}

// mdlTableJournal writes nothing.
type mdlTableJournal[Obj any] struct{}

func (mdlTableJournal[Obj]) Upsert(JournalBatch, []byte, Obj, Revision) error { return nil }
func (mdlTableJournal[Obj]) Delete(JournalBatch, []byte) error                { return nil }
func (mdlTableJournal[Obj]) DeleteAll(JournalBatch) error                     { return nil }
func (mdlTableJournal[Obj]) SetRevision(JournalBatch, Revision) error         { return nil }

// attach attaches the table to the run's journal, in a transaction of its
// own.
func (mt *mdlTable[Obj, PK]) attach(m *mdlRun) {
	txn := m.db.WriteTxn(mt.tbl)
	if err := SetJournal(txn, mt.tbl, Journal(m.journal), TableJournal[Obj](mdlTableJournal[Obj]{})); err != nil {
		m.fatalf("%s: SetJournal: %v", mt.tbl.Name(), err)
	}
	if _, err := txn.Commit(); err != nil {
		m.fatalf("%s: Commit of SetJournal: %v", mt.tbl.Name(), err)
	}
	mt.journaled = true
}

// journalWrite reports whether the open transaction's commit writes the
// table's changes to the journal: it is attached, and the transaction
// changed it.
func (mt *mdlTable[Obj, PK]) journalWrite() bool {
	return mt.journaled && mt.locked && mt.written
}

func (m *mdlRun) doStep() {
	r := m.r
	full := r.IntN(len(m.tables)) // the table to check fully
	if r.IntN(100) < mdlFeedPercent {
		full = r.IntN(len(m.tables))
		m.tables[full].feedOp(m, full)
	} else if m.txn == nil {
		switch n := r.IntN(100); {
		case n < 70:
			m.beginTxn(-1)
		case n < 85:
			i := r.IntN(len(m.tables))
			m.tables[i].takeWatch(m, m.db.ReadTxn(), m.tables[i].committedState(), "watch")
			m.log("watch")
		case n < 92 && len(m.snaps) > 0:
			// A watch on an old snapshot: closed at once if outdated.
			s := m.snaps[r.IntN(len(m.snaps))]
			i := r.IntN(len(m.tables))
			m.tables[i].takeWatch(m, s.txn, s.state(m, i), "watch on "+s.desc)
			m.log("watch(old)")
		default:
			m.addSnap(m.db.ReadTxn(), m.states(false), "ReadTxn")
			m.log("ReadTxn")
		}
	} else {
		switch n := r.IntN(100); {
		case n < 8:
			m.commit()
		case n < 10:
			m.abort()
		case n < 14:
			i := r.IntN(len(m.tables))
			m.tables[i].takeWatch(m, m.db.ReadTxn(), m.tables[i].committedState(), "watch")
			m.log("watch")
		case n < 18:
			// Through the open transaction, on what it wrote.
			i := r.IntN(len(m.tables))
			m.tables[i].takeWatch(m, m.txn, m.tables[i].viewState(), "WriteTxn")
			m.log("watch(WriteTxn)")
		default:
			mt := m.tables[full]
			for range 5 {
				// Mostly a table the transaction locked.
				if mt.isLocked() {
					break
				}
				full = r.IntN(len(m.tables))
				mt = m.tables[full]
			}
			op := mt.writeOp(m, m.txn)
			m.log(mt.meta().Name() + ": " + op)
			m.checkWatchesOpen("an uncommitted write")
		}
	}

	// The state the step changed: through the open transaction, or the
	// latest snapshot.
	var txn ReadTxn = m.txn
	where := "WriteTxn(" + m.txnDesc + ")"
	if m.txn == nil {
		txn, where = m.db.ReadTxn(), "db.ReadTxn"
	}
	// The table written (or a random one) is checked fully, the others
	// more briefly; Commit checked all of them fully.
	states := m.states(true)
	for i, mt := range m.tables {
		mt.check(m, txn, states[i], where, i == full)
	}
	if r.IntN(4) == 0 {
		m.addDeferred(txn, states)
	}
	m.runDeferred()
	// Uncommitted writes are not seen by new readers.
	if m.txn != nil && r.IntN(4) == 0 {
		i := r.IntN(len(m.tables))
		m.tables[i].check(m, m.db.ReadTxn(), m.tables[i].committedState(), "db.ReadTxn during WriteTxn", true)
	}
	// Old snapshots never see later commits.
	if len(m.snaps) > 0 && r.IntN(3) == 0 {
		s := m.snaps[r.IntN(len(m.snaps))]
		i := r.IntN(len(m.tables))
		m.tables[i].check(m, s.txn, s.state(m, i), s.desc, true)
	}
}

// mdlTables builds the tables of a run: each with different indexes.
// The last one is registered later, while the database is in use.
func mdlTables(r *rand.Rand) []mdlTableI {
	tables := []mdlTableI{
		mdlObjTable("people", true, false, true),
		mdlObjTable("tagged", false, true, true),
		mdlKVTable("kv"),
		mdlObjTable("mixed", true, true, true),
	}
	r.Shuffle(len(tables), func(i, j int) { tables[i], tables[j] = tables[j], tables[i] })
	return tables
}

// register registers mt with the database of the run, which may have a
// write transaction open.
func (m *mdlRun) register(mt mdlTableI) {
	if err := mt.register(m.db); err != nil {
		m.fatalf("NewTable: %v", err)
	}
	mt.begin(false)
	m.tables = append(m.tables, mt)
	m.log("NewTable(" + mt.meta().Name() + ")")
	if m.r.IntN(2) == 0 {
		mt.attach(m)
		m.log("SetJournal(" + mt.meta().Name() + ")")
	}
}

var (
	mdlIDs = func() []uint64 {
		ids := []uint64{255, 256, 1 << 32, 1<<40 + 7, math.MaxUint64}
		for i := range uint64(40) {
			ids = append(ids, i)
		}
		return ids
	}()
	mdlHotNames    = []string{"", "a", "a\x00", "a\x00b", "ab", "abc", "b", "ba", "\x00", "\xff", "zz", "o1"}
	mdlNamePrefix  = []string{"", "a", "a\x00", "ab", "o", "o1", "o3", "b", "\x00", "\xff", "zzz"}
	mdlTags        = []string{"", "a", "a\x00", "a\x00b", "ab", "b", "blue", "red", "x\x00\x00"}
	mdlTagPrefixes = []string{"", "a", "a\x00", "ab", "b", "bl", "r", "x\x00", "z"}
	mdlValuesPool  = []int{-3, -2, -1, 0, 1, 2, 3, -256, 255, 256, 1000, -1000, math.MinInt, math.MaxInt}
)

func mdlPick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

func mdlRandID(r *rand.Rand) uint64 {
	switch r.IntN(8) {
	case 0:
		return r.Uint64()
	case 1:
		return mdlPick(r, mdlIDs) + 1
	default:
		return mdlPick(r, mdlIDs)
	}
}

func mdlRandName(r *rand.Rand) string {
	switch r.IntN(3) {
	case 0:
		return mdlPick(r, mdlHotNames)
	default:
		return fmt.Sprintf("o%d", mdlPick(r, mdlIDs))
	}
}

func mdlRandValue(r *rand.Rand) int {
	if r.IntN(8) == 0 {
		return int(r.Int64())
	}
	return mdlPick(r, mdlValuesPool)
}

func mdlFmtObj(o *testObject) string {
	if o == nil {
		return "nil"
	}
	return fmt.Sprintf("{%d %q %v %d}", o.ID, o.Name, slices.Collect(o.Tags.All()), o.Value)
}

// mdlObjTable returns the model of a table of testObjects keyed by id, with
// some of the secondary indexes of testobj_test.go: name (unique), tags
// (non-unique, several keys per object) and value (non-unique).
func mdlObjTable(name string, withName, withTags, withValue bool) mdlTableI {
	mt := &mdlTable[*testObject, uint64]{
		pointerObj: true,
		pkOf:       func(o *testObject) uint64 { return o.ID },
		pkGen:      mdlRandID,
		fmtObj:     mdlFmtObj,
	}
	mt.gen = func(r *rand.Rand, id uint64) *testObject {
		o := &testObject{ID: id}
		if withName {
			o.Name = mdlRandName(r)
		}
		if withTags {
			var tags []string
			for range r.IntN(4) {
				tags = append(tags, mdlPick(r, mdlTags))
			}
			o.Tags = part.NewSet(tags...)
		}
		if withValue {
			o.Value = mdlRandValue(r)
		}
		return o
	}
	mt.merge = func(old, new *testObject) *testObject {
		return &testObject{ID: old.ID, Name: new.Name, Tags: old.Tags.Union(new.Tags), Value: old.Value + new.Value}
	}
	mt.changePK = func(o *testObject) *testObject {
		c := *o
		c.ID++
		return &c
	}
	if withName {
		mt.stealUnique = func(o, victim *testObject) *testObject {
			c := *o
			c.Name = victim.Name
			return &c
		}
	}

	var secondary []Indexer[*testObject]
	mt.indexes = append(mt.indexes, &mdlIdx[*testObject, uint64, uint64]{
		tbl: mt, ix: idIndex,
		keysOf: func(o *testObject) []uint64 { return []uint64{o.ID} },
		keyGen: mdlRandID,
		fmtKey: func(k uint64) string { return fmt.Sprint(k) },
		prefix: func(r *rand.Rand) (Query[*testObject], func() string, uint64, func(uint64) bool) {
			// A prefix of the 8 big-endian bytes of an id: ids that agree
			// on their top n bytes.
			x := mdlRandID(r)
			n := mdlPick(r, []int{0, 4, 7, 8})
			shift := uint(64 - 8*n)
			mask := uint64(1)<<shift - 1
			if shift == 64 {
				mask = math.MaxUint64
			}
			return idIndex.QueryKey(index.Uint64(x)[:n]), func() string { return fmt.Sprintf("top %d bytes of %d", n, x) },
				x &^ mask, func(k uint64) bool { return k&^mask == x&^mask }
		},
	})
	if withName {
		secondary = append(secondary, nameIndex)
		mt.indexes = append(mt.indexes, &mdlIdx[*testObject, uint64, string]{
			tbl: mt, ix: nameIndex,
			keysOf:   func(o *testObject) []string { return []string{o.Name} },
			keyGen:   mdlRandName,
			fmtKey:   func(k string) string { return fmt.Sprintf("%q", k) },
			prefix:   mdlStringPrefix(nameIndex, mdlNamePrefix),
			emptyKey: new(string),
		})
	}
	if withTags {
		secondary = append(secondary, tagsIndex)
		mt.indexes = append(mt.indexes, &mdlIdx[*testObject, uint64, string]{
			tbl: mt, ix: tagsIndex, multi: true,
			keysOf: func(o *testObject) []string { return slices.Collect(o.Tags.All()) },
			keyGen: func(r *rand.Rand) string {
				if r.IntN(6) == 0 {
					return mdlPick(r, mdlTagPrefixes)
				}
				return mdlPick(r, mdlTags)
			},
			fmtKey:   func(k string) string { return fmt.Sprintf("%q", k) },
			prefix:   mdlStringPrefix(tagsIndex, mdlTagPrefixes),
			emptyKey: new(string),
		})
	}
	if withValue {
		secondary = append(secondary, valueIndex)
		mt.indexes = append(mt.indexes, &mdlIdx[*testObject, uint64, int]{
			tbl: mt, ix: valueIndex,
			keysOf: func(o *testObject) []int { return []int{o.Value} },
			keyGen: mdlRandValue,
			fmtKey: func(k int) string { return fmt.Sprint(k) },
			prefix: func(r *rand.Rand) (Query[*testObject], func() string, int, func(int) bool) {
				// A whole key is a prefix of itself only.
				v := mdlRandValue(r)
				return valueIndex.Query(v), func() string { return fmt.Sprint(v) }, v, func(k int) bool { return k == v }
			},
		})
	}
	for i, x := range mt.indexes {
		switch x := x.(type) {
		case *mdlIdx[*testObject, uint64, uint64]:
			x.pos = i
		case *mdlIdx[*testObject, uint64, string]:
			x.pos = i
		case *mdlIdx[*testObject, uint64, int]:
			x.pos = i
		}
	}
	mt.create = func(db *DB) (RWTable[*testObject], error) { return NewTable(db, name, idIndex, secondary...) }
	return mt
}

func mdlStringPrefix[Obj any](ix Index[Obj, string], prefixes []string) func(r *rand.Rand) (Query[Obj], func() string, string, func(string) bool) {
	return func(r *rand.Rand) (Query[Obj], func() string, string, func(string) bool) {
		p := mdlPick(r, prefixes)
		return ix.Query(p), func() string { return fmt.Sprintf("%q", p) }, p, func(k string) bool { return strings.HasPrefix(k, p) }
	}
}

// mdlKV is the object of the table with only a primary index: a value
// type, keyed by a string of any length and bytes.
type mdlKV struct {
	Key string
	Val int
}

var (
	mdlKVIndex = Index[mdlKV, string]{
		Name:       "key",
		FromObject: func(o mdlKV) index.KeySet { return index.NewKeySet(index.String(o.Key)) },
		FromKey:    index.String,
		Unique:     true,
	}
	mdlKVKeys = func() []string {
		keys := []string{"", "a", "a\x00", "a\x00\x00", "a\x00b", "ab", "abc", "abd", "b", "\x00", "\xff\xff",
			strings.Repeat("k", 300) + "1", strings.Repeat("k", 300) + "2", strings.Repeat("k", 301)}
		for i := range 30 {
			keys = append(keys, fmt.Sprintf("key%d", i))
		}
		return keys
	}()
	mdlKVPrefixes = []string{"", "a", "a\x00", "ab", "k", "kkkk", "key1", "key", "\x00", "z"}
)

func mdlKVTable(name string) mdlTableI {
	mt := &mdlTable[mdlKV, string]{
		pkOf:  func(o mdlKV) string { return o.Key },
		pkGen: func(r *rand.Rand) string { return mdlPick(r, mdlKVKeys) },
		gen: func(r *rand.Rand, k string) mdlKV {
			return mdlKV{k, r.IntN(4)}
		},
		merge:    func(old, new mdlKV) mdlKV { return mdlKV{old.Key, old.Val*7 + new.Val} },
		changePK: func(o mdlKV) mdlKV { return mdlKV{o.Key + "!", o.Val} },
		fmtObj:   func(o mdlKV) string { return fmt.Sprintf("{%q %d}", o.Key, o.Val) },
	}
	mt.indexes = []mdlIndex[mdlKV, string]{&mdlIdx[mdlKV, string, string]{
		tbl: mt, ix: mdlKVIndex,
		keysOf: func(o mdlKV) []string { return []string{o.Key} },
		keyGen: func(r *rand.Rand) string {
			if r.IntN(4) == 0 {
				return mdlPick(r, mdlKVPrefixes)
			}
			return mdlPick(r, mdlKVKeys)
		},
		fmtKey: func(k string) string {
			if len(k) > 20 {
				return fmt.Sprintf("%q...(%d bytes)", k[:10], len(k))
			}
			return fmt.Sprintf("%q", k)
		},
		prefix:   mdlStringPrefix(mdlKVIndex, mdlKVPrefixes),
		emptyKey: new(string),
	}}
	mt.create = func(db *DB) (RWTable[mdlKV], error) { return NewTable(db, name, mdlKVIndex) }
	return mt
}

func TestModel(t *testing.T) {
	steps := 100_000
	if testing.Short() {
		steps = 10_000
	}
	if raceDetector {
		steps /= 10 // one goroutine: see race_on_test.go
	}
	if *mdlLongFlag {
		steps *= 10
	}
	if *mdlStepsFlag > 0 {
		steps = *mdlStepsFlag
	}
	seed := *mdlSeedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (rerun with -strata.model.seed=%d), %d steps", seed, seed, steps)
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))

	// Several rounds, each on a new database, so that tables also grow
	// from empty many times.
	const perRound = 5000
	stats := map[string]int{}
	for done := 0; done < steps; done += perRound {
		db := New()
		m := &mdlRun{t: t, seed: seed, r: r, db: db, stats: stats, journal: &mdlJournal{}}
		tables := mdlTables(r)
		for _, mt := range tables[:len(tables)-1] {
			m.register(mt)
		}
		late := done + r.IntN(perRound/2)
		for m.step = done; m.step < min(done+perRound, steps); m.step++ {
			if m.step == late {
				m.register(tables[len(tables)-1])
			}
			m.doStep()
		}
		if m.txn != nil {
			m.commit()
		}
		m.endFeeds()
	}
	t.Logf("operations: %v", stats)
}

// TestReverseScansNilKey: a query key may be nil (QueryKey(nil),
// index.Bytes(nil) or of an empty slice): the empty key, below all others.
// Regression test: ReverseRange(nil, to) once made its upper bound
// inclusive, and ReverseLowerBound(nil) once scanned without a bound.
func TestReverseScansNilKey(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "bugnil", valueIndex)
	txn := db.WriteTxn(tbl)
	for i := range uint64(8) {
		if _, _, err := tbl.Insert(txn, &testObject{ID: i, Value: int(i)}); err != nil {
			t.Fatal(err)
		}
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(tbl.Range(rtxn, idIndex.QueryKey(nil), idIndex.Query(5))); !slices.Equal(got, []uint64{0, 1, 2, 3, 4}) {
		t.Errorf("Range(id nil..5) = %v", got)
	}
	if got := ids(tbl.ReverseRange(rtxn, idIndex.QueryKey(nil), idIndex.Query(5))); !slices.Equal(got, []uint64{4, 3, 2, 1, 0}) {
		t.Errorf("ReverseRange(id nil..5) = %v, want [4 3 2 1 0]", got)
	}
	if got := ids(tbl.ReverseRange(rtxn, valueIndex.QueryKey(nil), valueIndex.Query(5))); !slices.Equal(got, []uint64{4, 3, 2, 1, 0}) {
		t.Errorf("ReverseRange(value nil..5) = %v, want [4 3 2 1 0]", got)
	}
	if got := ids(tbl.ReverseLowerBound(rtxn, idIndex.QueryKey(nil))); len(got) != 0 {
		t.Errorf("ReverseLowerBound(id nil) = %v, want []", got)
	}
}
