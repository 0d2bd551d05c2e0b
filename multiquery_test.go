package strata

// Tests of And, In and Or (multiquery.go), typed and through AnyTable: a
// model test against a map of the objects, with the watch channels of
// every query; the plan's choice of input and its watch channel; and the
// typed errors.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"iter"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

var multiSeedFlag = flag.Uint64("strata.multi.seed", 0, "seed of TestMultiQueryModel (0: random)")

// multiAtom is one query of a multi-index query, with what it selects in
// the model.
type multiAtom struct {
	q     Query[*testObject]
	desc  string
	match func(o *testObject) bool
}

// multiCase is a random And, In or Or, with the model's answer.
type multiCase struct {
	desc string
	qs   []Query[*testObject]
	run  func(ReadTxn) (iter.Seq2[*testObject, Revision], <-chan struct{}, error)
	want func(model map[uint64]*testObject) []*testObject
	// touches reports whether writing o (as it was, or as it is now)
	// may change the result: o matches one of the queries.
	touches func(o *testObject) bool
}

// multiRandomAtom returns a query of a random index of the test table:
// the primary, the unique name, the multi-key tags or the value index.
func multiRandomAtom(r *rand.Rand, ix int) multiAtom {
	switch ix {
	case 0:
		id := uint64(r.IntN(40))
		return multiAtom{idIndex.Query(id), fmt.Sprintf("id=%d", id), func(o *testObject) bool { return o.ID == id }}
	case 1:
		name := fmt.Sprintf("h%d", r.IntN(40))
		return multiAtom{nameIndex.Query(name), "name=" + name, func(o *testObject) bool { return o.Name == name }}
	case 2:
		tag := string(rune('a' + r.IntN(4)))
		return multiAtom{tagsIndex.Query(tag), "tags=" + tag, func(o *testObject) bool { return o.Tags.Has(tag) }}
	default:
		v := r.IntN(6)
		return multiAtom{valueIndex.Query(v), fmt.Sprintf("value=%d", v), func(o *testObject) bool { return o.Value == v }}
	}
}

// byID returns the objects of model that keep selects, in primary-key
// order.
func byID(model map[uint64]*testObject, keep func(*testObject) bool) []*testObject {
	var out []*testObject
	for _, id := range slices.Sorted(maps.Keys(model)) {
		if o := model[id]; keep(o) {
			out = append(out, o)
		}
	}
	return out
}

func multiCases(r *rand.Rand, tbl Table[*testObject]) []multiCase {
	var cs []multiCase
	atoms := func(n int, oneIndex bool) ([]multiAtom, []Query[*testObject], string) {
		var as []multiAtom
		var qs []Query[*testObject]
		var descs []string
		ix := r.IntN(4)
		for range n {
			if !oneIndex {
				ix = r.IntN(4)
			}
			a := multiRandomAtom(r, ix)
			as, qs, descs = append(as, a), append(qs, a.q), append(descs, a.desc)
		}
		return as, qs, strings.Join(descs, ", ")
	}
	for range 3 {
		for _, op := range []string{"And", "Or", "In"} {
			// Fresh variables for each case: its closures keep them.
			var as []multiAtom
			var qs []Query[*testObject]
			var desc string
			switch op {
			case "And":
				as, qs, desc = atoms(1+r.IntN(3), false)
			case "Or":
				as, qs, desc = atoms(1+r.IntN(4), r.IntN(2) == 0)
			default:
				as, qs, desc = atoms(1+r.IntN(4), true)
			}
			cs = append(cs, multiCaseOf(tbl, op, as, qs, desc))
		}
	}
	// The same queries through AnyTable, with encoded keys (the primary
	// index named "" now and then).
	at := AnyTable{Meta: tbl}
	anyFns := map[string]func(ReadTxn, ...AnyQuery) (iter.Seq[AnyObject], <-chan struct{}, error){
		"And": at.AndWatch, "Or": at.OrWatch, "In": at.InWatch,
	}
	for _, c := range slices.Clone(cs) {
		op, _, _ := strings.Cut(c.desc, "(")
		var aqs []AnyQuery
		for _, q := range c.qs {
			aq := AnyQuery{Index: q.IndexName(), Op: QueryList, Key: q.Key()}
			if aq.Index == idIndex.Name && r.IntN(2) == 0 {
				aq.Index = ""
			}
			aqs = append(aqs, aq)
		}
		f := anyFns[op]
		c.desc = "AnyTable." + c.desc
		c.run = func(txn ReadTxn) (iter.Seq2[*testObject, Revision], <-chan struct{}, error) {
			seq, ch, err := f(txn, aqs...)
			if err != nil {
				return nil, nil, err
			}
			return func(yield func(*testObject, Revision) bool) {
				for o := range seq {
					if o.Cursor != nil || !yield(o.Object.(*testObject), o.Revision) {
						return
					}
				}
			}, ch, nil
		}
		cs = append(cs, c)
	}
	return cs
}

// multiCaseOf returns the case of op (And, Or or In) of the queries qs,
// whose atoms as say what each selects in the model.
func multiCaseOf(tbl Table[*testObject], op string, as []multiAtom, qs []Query[*testObject], desc string) multiCase {
	anyMatch := func(o *testObject) bool { return slices.ContainsFunc(as, func(a multiAtom) bool { return a.match(o) }) }
	c := multiCase{desc: op + "(" + desc + ")", qs: qs, touches: anyMatch}
	switch op {
	case "And":
		c.run = func(txn ReadTxn) (iter.Seq2[*testObject, Revision], <-chan struct{}, error) {
			return AndWatch(txn, tbl, qs...)
		}
		c.want = func(m map[uint64]*testObject) []*testObject {
			return byID(m, func(o *testObject) bool {
				return !slices.ContainsFunc(as, func(a multiAtom) bool { return !a.match(o) })
			})
		}
	case "Or":
		c.run = func(txn ReadTxn) (iter.Seq2[*testObject, Revision], <-chan struct{}, error) {
			return OrWatch(txn, tbl, qs...)
		}
		c.want = func(m map[uint64]*testObject) []*testObject { return byID(m, anyMatch) }
	default:
		c.run = func(txn ReadTxn) (iter.Seq2[*testObject, Revision], <-chan struct{}, error) {
			return InWatch(txn, tbl, qs...)
		}
		c.want = func(m map[uint64]*testObject) []*testObject {
			// By key (encoded: the index's order), then by primary
			// key; each object under its first key.
			sorted := slices.Clone(as)
			slices.SortFunc(sorted, func(a, b multiAtom) int { return bytes.Compare(a.q.Key(), b.q.Key()) })
			var out []*testObject
			seen := map[uint64]bool{}
			for _, a := range sorted {
				for _, o := range byID(m, a.match) {
					if !seen[o.ID] {
						seen[o.ID] = true
						out = append(out, o)
					}
				}
			}
			return out
		}
	}
	return c
}

// multiCheck runs c through txn and compares its objects with want; each
// object's revision must be the one the primary index holds.
func multiCheck(t *testing.T, step string, tbl Table[*testObject], txn ReadTxn, c multiCase, seq iter.Seq2[*testObject, Revision], want []*testObject) {
	t.Helper()
	var got []*testObject
	for o, rev := range seq {
		got = append(got, o)
		if _, prev, found := tbl.Get(txn, idIndex.Query(o.ID)); !found || prev != rev {
			t.Fatalf("%s: %s: object %d at revision %d; the table holds it at %d (found %v)", step, c.desc, o.ID, rev, prev, found)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %s = %v, want %v", step, c.desc, multiIDs(got), multiIDs(want))
	}
}

func multiIDs(objs []*testObject) []string {
	var s []string
	for _, o := range objs {
		s = append(s, fmt.Sprintf("%d%s", o.ID, o.Tags.String()))
	}
	return s
}

// multiWatch is a query taken with its watch channel in a snapshot.
type multiWatch struct {
	c    multiCase
	seq  iter.Seq2[*testObject, Revision]
	ch   <-chan struct{}
	want []*testObject // the result in the snapshot
}

// TestMultiQueryModel runs random writes, and after each write, through
// the write transaction, and after each commit, random And, In and Or
// queries against a map of the objects. Every query's watch channel,
// taken before a transaction, must be closed after a commit that changed
// its result, and open after one that wrote no object matching any of its
// queries (as it was or as it is now), or after an abort; its iterator
// must still return the result of its snapshot.
//
// A channel is that of a tree node (see And), which may also close when
// a key near the node's changes: then the write was to this table. So a
// commit that wrote only another table, or an abort, must leave every
// channel open; a commit that changed the result must close it; and one
// that wrote objects of this table none of which matches a query may
// close it (counted, and logged).
func TestMultiQueryModel(t *testing.T) {
	r := seededRand(t, *multiSeedFlag, "strata.multi.seed", 30)
	db := New()
	tbl := newTestTable(t, db, "multi", nameIndex, tagsIndex, valueIndex)
	other := newTestTable(t, db, "other", nameIndex, tagsIndex, valueIndex)
	committed := map[uint64]*testObject{}
	steps := 2000
	if testing.Short() {
		steps = 400
	}
	closes, nearby := 0, 0 // channels closed by matching writes, by others
	for step := range steps {
		var watches []multiWatch
		rtxn := db.ReadTxn()
		for _, c := range multiCases(r, tbl) {
			seq, ch, err := c.run(rtxn)
			must(t, err)
			if ch == nil {
				t.Fatalf("step %d: %s: no watch channel", step, c.desc)
			}
			w := multiWatch{c: c, seq: seq, ch: ch, want: c.want(committed)}
			multiCheck(t, fmt.Sprintf("step %d", step), tbl, rtxn, c, seq, w.want)
			watches = append(watches, w)
		}
		wtxn := db.WriteTxn(tbl, other)
		model := maps.Clone(committed)
		var written []*testObject // as they were and as they are now
		if r.IntN(4) == 0 {
			// Another table's objects, just as those of the queries.
			id := uint64(r.IntN(40))
			mustInsert(t, other, wtxn, &testObject{ID: id, Name: fmt.Sprintf("h%d", id), Value: 1, Tags: part.NewSet("a")})
		}
		for w := range r.IntN(5) {
			id := uint64(r.IntN(40))
			if old := model[id]; old != nil {
				written = append(written, old)
			}
			if r.IntN(3) == 0 {
				_, had, err := tbl.Delete(wtxn, &testObject{ID: id})
				must(t, err)
				if had != (model[id] != nil) {
					t.Fatalf("step %d: Delete(%d) had %v, the model %v", step, id, had, model[id] != nil)
				}
				delete(model, id)
			} else {
				var tags []string
				for _, tg := range []string{"a", "b", "c", "d"} {
					if r.IntN(3) == 0 {
						tags = append(tags, tg)
					}
				}
				o := &testObject{ID: id, Name: fmt.Sprintf("h%d", id), Value: r.IntN(6), Tags: part.NewSet(tags...)}
				mustInsert(t, tbl, wtxn, o)
				model[id] = o
				written = append(written, o)
			}
			// Through the write transaction: its own writes.
			for _, c := range multiCases(r, tbl)[:3] {
				seq, _, err := c.run(wtxn)
				must(t, err)
				multiCheck(t, fmt.Sprintf("step %d, write %d", step, w), tbl, wtxn, c, seq, c.want(model))
			}
		}
		aborted := r.IntN(6) == 0
		if aborted {
			wtxn.Abort()
		} else {
			mustCommit(t, wtxn)
			committed = model
		}
		for _, w := range watches {
			closed := mdlClosed(w.ch)
			switch now := w.c.want(committed); {
			case aborted && closed:
				t.Fatalf("step %d: %s: channel closed by an aborted transaction", step, w.c.desc)
			case !slices.Equal(now, w.want) && !closed:
				t.Fatalf("step %d: %s: result changed from %v to %v, channel open", step, w.c.desc, multiIDs(w.want), multiIDs(now))
			case closed && len(written) == 0:
				t.Fatalf("step %d: %s: channel closed by a commit that wrote no object of the table", step, w.c.desc)
			case closed && !slices.ContainsFunc(written, w.c.touches):
				nearby++
			case closed:
				closes++
			}
			// The iterator reads its snapshot, whatever came after.
			multiCheck(t, fmt.Sprintf("step %d, rerun", step), tbl, rtxn, w.c, w.seq, w.want)
		}
	}
	t.Logf("channels closed: %d by writes of matching objects, %d by writes of others", closes, nearby)
	if closes == 0 {
		t.Fatal("no watch channel closed")
	}
}

// TestMultiQueryErrors: bad input is a typed error, with no iterator and
// no channel, never a panic, and it changes nothing.
func TestMultiQueryErrors(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "multi", nameIndex, tagsIndex, valueIndex)
	txn := mustInsertAll(t, db, tbl, &testObject{ID: 1, Name: "a", Value: 1, Tags: part.NewSet("x")})
	routes, cidr := newRouteTable(t, db, false)
	rtxn := db.ReadTxn()

	unknown := Index[*testObject, string]{Name: "nope", FromKey: index.String}.Query("x")
	ops := map[string]func(ReadTxn, Table[*testObject], ...Query[*testObject]) (iter.Seq2[*testObject, Revision], <-chan struct{}, error){
		"And": AndWatch[*testObject], "In": InWatch[*testObject], "Or": OrWatch[*testObject],
	}
	plain := map[string]func(ReadTxn, Table[*testObject], ...Query[*testObject]) (iter.Seq2[*testObject, Revision], error){
		"And": And[*testObject], "In": In[*testObject], "Or": Or[*testObject],
	}
	cases := []struct {
		name string
		qs   []Query[*testObject]
		want error
		only string // the op the case applies to, "" for all
	}{
		{"no queries", nil, ErrNoQueries, ""},
		{"unknown index", []Query[*testObject]{valueIndex.Query(1), unknown}, ErrIndexNotFound, "And"},
		{"unknown index", []Query[*testObject]{unknown}, ErrIndexNotFound, ""},
		{"zero query", []Query[*testObject]{{}}, ErrIndexNotFound, ""},
		{"unknown index after a good one", []Query[*testObject]{nameIndex.Query("a"), unknown}, ErrIndexNotFound, "Or"},
		{"mixed indexes", []Query[*testObject]{valueIndex.Query(1), tagsIndex.Query("x")}, ErrMixedIndexes, "In"},
		{"mixed indexes, the primary", []Query[*testObject]{idIndex.Query(1), nameIndex.Query("a")}, ErrMixedIndexes, "In"},
	}
	rev := tbl.Revision(db.ReadTxn())
	for _, c := range cases {
		for op, f := range ops {
			if c.only != "" && c.only != op {
				continue
			}
			var seq iter.Seq2[*testObject, Revision]
			var ch <-chan struct{}
			var err error
			if p := catch(func() { seq, ch, err = f(txn, tbl, c.qs...) }); p != nil {
				t.Fatalf("%s: %sWatch panicked: %v", c.name, op, p)
			}
			if !errors.Is(err, c.want) || seq != nil || ch != nil {
				t.Fatalf("%s: %sWatch = %v, %v, %v; want %v", c.name, op, seq != nil, ch, err, c.want)
			}
			if !strings.Contains(err.Error(), `table "multi"`) {
				t.Fatalf("%s: %s: %q does not name the table", c.name, op, err)
			}
			if seq, err := plain[op](txn, tbl, c.qs...); !errors.Is(err, c.want) || seq != nil {
				t.Fatalf("%s: %s = %v, %v; want %v", c.name, op, seq != nil, err, c.want)
			}
		}
	}
	// In accepts queries of one index, And and Or of several.
	if _, err := In(txn, tbl, valueIndex.Query(1), valueIndex.Query(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := And(txn, tbl, valueIndex.Query(1), tagsIndex.Query("x"), idIndex.Query(1)); err != nil {
		t.Fatal(err)
	}
	// An LPM index selects by containment: ErrInvalidQuery.
	for _, q := range []Query[*route]{cidr.Containing(netip.MustParseAddr("10.0.0.1")), cidr.Query(netip.MustParsePrefix("10.0.0.0/8"))} {
		for op, f := range map[string]func(ReadTxn, Table[*route], ...Query[*route]) (iter.Seq2[*route, Revision], error){
			"And": And[*route], "In": In[*route], "Or": Or[*route],
		} {
			if seq, err := f(rtxn, routes, q); !errors.Is(err, ErrInvalidQuery) || seq != nil {
				t.Fatalf("%s of an LPM query: %v, %v; want ErrInvalidQuery", op, seq != nil, err)
			}
		}
	}
	// AnyTable: keys, and nothing else, of known indexes.
	at := AnyTable{Meta: tbl}
	anyOps := map[string]func(ReadTxn, ...AnyQuery) (iter.Seq[AnyObject], <-chan struct{}, error){
		"And": at.AndWatch, "In": at.InWatch, "Or": at.OrWatch,
	}
	for _, c := range []struct {
		name string
		qs   []AnyQuery
		want error
	}{
		{"no queries", nil, ErrNoQueries},
		{"unknown index", []AnyQuery{{Index: "nope", Op: QueryList, Key: index.String("x")}}, ErrIndexNotFound},
		{"prefix", []AnyQuery{{Index: "value", Op: QueryPrefix, Key: index.Int(1)}}, ErrInvalidQuery},
		{"all", []AnyQuery{{Index: "value"}}, ErrInvalidQuery},
		{"To set", []AnyQuery{{Index: "value", Op: QueryList, Key: index.Int(1), To: index.Int(2)}}, ErrInvalidQuery},
		{"After set", []AnyQuery{{Op: QueryList, Key: index.Uint64(1), After: index.Uint64(0)}}, ErrInvalidQuery},
	} {
		for op, f := range anyOps {
			var seq iter.Seq[AnyObject]
			var ch <-chan struct{}
			var err error
			if p := catch(func() { seq, ch, err = f(txn, c.qs...) }); p != nil {
				t.Fatalf("AnyTable %s: %sWatch panicked: %v", c.name, op, p)
			}
			if !errors.Is(err, c.want) || seq != nil || ch != nil {
				t.Fatalf("AnyTable %s: %sWatch = %v, %v, %v; want %v", c.name, op, seq != nil, ch, err, c.want)
			}
		}
	}
	mixed := []AnyQuery{{Op: QueryList, Key: index.Uint64(1)}, {Index: "name", Op: QueryList, Key: index.String("a")}}
	if seq, err := at.In(txn, mixed...); !errors.Is(err, ErrMixedIndexes) || seq != nil {
		t.Fatalf("AnyTable.In of two indexes: %v, %v; want ErrMixedIndexes", seq != nil, err)
	}
	for name, f := range map[string]func(ReadTxn, ...AnyQuery) (iter.Seq[AnyObject], error){"And": at.And, "Or": at.Or} {
		seq, err := f(txn, mixed...)
		must(t, err)
		var got []uint64
		for o := range seq {
			got = append(got, o.Object.(*testObject).ID)
		}
		if !slices.Equal(got, []uint64{1}) {
			t.Fatalf("AnyTable.%s(id=1, name=a) = %v, want [1]", name, got)
		}
	}
	if got := tbl.Revision(db.ReadTxn()); got != rev {
		t.Fatalf("revision %d after the bad queries, was %d", got, rev)
	}
}

// TestAndPlan: And starts from its smallest input, by count, and its
// watch channel is that input's: writes of objects of larger inputs only
// leave it open, a write of one of the smallest closes it.
func TestAndPlan(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "plan", nameIndex, tagsIndex, valueIndex)
	wtxn := db.WriteTxn(tbl)
	for i := range 1000 {
		mustInsert(t, tbl, wtxn, &testObject{ID: uint64(i), Name: fmt.Sprintf("h%d", i), Value: i % 2, Tags: part.NewSet("common")})
	}
	// Five rare ones, whose primary keys differ in their first byte, so
	// that the node of their tag's entries is theirs alone (a channel of
	// a node whose prefix is longer than the key is its parent's).
	var rare []uint64
	for j := range uint64(5) {
		id := (j + 1) << 56
		rare = append(rare, id)
		mustInsert(t, tbl, wtxn, &testObject{ID: id, Name: fmt.Sprintf("r%d", j), Value: 1, Tags: part.NewSet("common", "rare")})
	}
	txn := mustCommit(t, wtxn)
	tt := tableOf[*testObject](tbl)
	for _, c := range []struct {
		qs    []Query[*testObject]
		first string
		n     []int
	}{
		{[]Query[*testObject]{valueIndex.Query(1), tagsIndex.Query("rare")}, "tags", []int{5, 505}},
		{[]Query[*testObject]{tagsIndex.Query("common"), valueIndex.Query(1), tagsIndex.Query("rare")}, "tags", []int{5, 505, 1005}},
		{[]Query[*testObject]{tagsIndex.Query("common"), nameIndex.Query("h407")}, "name", []int{1, 1005}},
		{[]Query[*testObject]{valueIndex.Query(0), nameIndex.Query("none")}, "name", []int{0, 500}},
		{[]Query[*testObject]{valueIndex.Query(0), idIndex.Query(4)}, "id", []int{1, 500}},
	} {
		ins, err := tt.andPlan(txn, c.qs)
		must(t, err)
		var ns []int
		for _, in := range ins {
			ns = append(ns, in.n)
		}
		if ins[0].ix.name != c.first || !slices.Equal(ns, c.n) {
			t.Fatalf("plan of %d queries starts from %q with counts %v; want %q, %v", len(c.qs), ins[0].ix.name, ns, c.first, c.n)
		}
	}

	seq, watch, err := AndWatch(txn, tbl, tagsIndex.Query("common"), valueIndex.Query(1), tagsIndex.Query("rare"))
	must(t, err)
	var got []uint64
	for o := range seq {
		got = append(got, o.ID)
	}
	if !slices.Equal(got, rare) {
		t.Fatalf("And(common, value=1, rare) = %v, want %v", got, rare)
	}
	one, oneWatch, err := AndWatch(txn, tbl, tagsIndex.Query("common"), nameIndex.Query("h407"))
	must(t, err)
	if objs := Collect(one); len(objs) != 1 || objs[0].ID != 407 {
		t.Fatalf("And(common, name=h407) = %v", multiIDs(objs))
	}
	// Objects of the larger inputs, without the rare tag and other than
	// h407: replaced, deleted, added.
	wtxn = db.WriteTxn(tbl)
	mustInsert(t, tbl, wtxn, &testObject{ID: 9, Name: "h9", Value: 1, Tags: part.NewSet("common", "x")})
	_, _, err = tbl.Delete(wtxn, &testObject{ID: 11})
	must(t, err)
	mustInsert(t, tbl, wtxn, &testObject{ID: 5001, Name: "h5001", Value: 1, Tags: part.NewSet("common")})
	mustCommit(t, wtxn)
	if mdlClosed(watch) || mdlClosed(oneWatch) {
		t.Fatalf("channels closed (%v, %v) by writes of objects in the larger inputs only", mdlClosed(watch), mdlClosed(oneWatch))
	}
	// A rare object whose value becomes 0 leaves the result; h407 is
	// replaced.
	wtxn = db.WriteTxn(tbl)
	mustInsert(t, tbl, wtxn, &testObject{ID: rare[2], Name: "r2", Value: 0, Tags: part.NewSet("common", "rare")},
		&testObject{ID: 407, Name: "h407", Value: 3, Tags: part.NewSet("common")})
	txn = mustCommit(t, wtxn)
	if !mdlClosed(watch) || !mdlClosed(oneWatch) {
		t.Fatalf("channels open (%v, %v) after the results changed", !mdlClosed(watch), !mdlClosed(oneWatch))
	}
	seq, err = And(txn, tbl, valueIndex.Query(1), tagsIndex.Query("rare"))
	must(t, err)
	if got := len(Collect(seq)); got != 4 {
		t.Fatalf("And(value=1, tags=rare) has %d objects after one left, want 4", got)
	}
}
