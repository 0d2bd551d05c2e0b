package strata

// Tests of the counts (count.go): a model test against a brute-force count
// of a map of the objects, the watch channels, and the typed errors.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

var countSeedFlag = flag.Uint64("strata.count.seed", 0, "seed of TestCountModel (0: random)")

// countCheck is one count query with the table's read of the same query.
type countCheck struct {
	name string
	// count is the package function; any is the same query through
	// AnyTable.Count.
	count func(ReadTxn) (int, error)
	any   AnyQuery
	// read is the read of the same query, whose objects the count counts.
	read func(ReadTxn) []*testObject
	// want counts, one by one, the objects of the model the query selects.
	want func(model map[uint64]*testObject) int
	// multiKey: the query counts the tags index by prefix or range, which
	// fails with ErrCannotCount once an object had several tags.
	multiKey bool
}

// countModelKeys returns true if some key of o in ix satisfies match.
func countModelKeys[Key any](ix Index[*testObject, Key], o *testObject, match func([]byte) bool) bool {
	keys := ix.FromObject(o)
	for i := range keys.Len() {
		if match(keys.At(i)) {
			return true
		}
	}
	return false
}

func countModel[Key any](ix Index[*testObject, Key], match func([]byte) bool) func(map[uint64]*testObject) int {
	return func(model map[uint64]*testObject) int {
		n := 0
		for _, o := range model {
			if countModelKeys(ix, o, match) {
				n++
			}
		}
		return n
	}
}

func readObjects(seq func(func(*testObject, Revision) bool)) []*testObject {
	var out []*testObject
	for o := range seq {
		out = append(out, o)
	}
	return out
}

// countChecks returns random count queries of tbl, of every kind, on every
// index, with the model's answer to each.
func countChecks(r *rand.Rand, tbl RWTable[*testObject]) []countCheck {
	var cs []countCheck
	// The table.
	cs = append(cs, countCheck{
		name:  "CountAll",
		count: func(txn ReadTxn) (int, error) { return CountAll(txn, tbl), nil },
		any:   AnyQuery{},
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.All(txn)) },
		want:  func(m map[uint64]*testObject) int { return len(m) },
	})
	// A key of the non-unique value index, of the unique name index, and
	// of the multi-key tags index.
	v := r.IntN(8)
	vq := valueIndex.Query(v)
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("Count(value=%d)", v),
		count: func(txn ReadTxn) (int, error) { return Count(txn, tbl, vq) },
		any:   AnyQuery{Index: "value", Op: QueryList, Key: index.Int(v)},
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.List(txn, vq)) },
		want:  countModel(valueIndex, func(k []byte) bool { return bytes.Equal(k, index.Int(v)) }),
	})
	name := fmt.Sprintf("h%d", r.IntN(80))
	nq := nameIndex.Query(name)
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("Count(name=%s)", name),
		count: func(txn ReadTxn) (int, error) { return Count(txn, tbl, nq) },
		any:   AnyQuery{Index: "name", Op: QueryList, Key: index.String(name)},
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.List(txn, nq)) },
		want:  countModel(nameIndex, func(k []byte) bool { return string(k) == name }),
	})
	tag := string(rune('a' + r.IntN(4)))
	tq := tagsIndex.Query(tag)
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("Count(tags=%s)", tag),
		count: func(txn ReadTxn) (int, error) { return Count(txn, tbl, tq) },
		any:   AnyQuery{Index: "tags", Op: QueryList, Key: index.String(tag)},
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.List(txn, tq)) },
		want:  countModel(tagsIndex, func(k []byte) bool { return string(k) == tag }),
	})
	// Prefixes: of names ("h1" holds h1 and h10..h19), of the encoded
	// value and id keys (a byte string shorter than the key).
	np := fmt.Sprintf("h%d", r.IntN(10))
	if r.IntN(4) == 0 {
		np = ""
	}
	npq := nameIndex.Query(np)
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("CountPrefix(name=%q)", np),
		count: func(txn ReadTxn) (int, error) { return CountPrefix(txn, tbl, npq) },
		any:   AnyQuery{Index: "name", Op: QueryPrefix, Key: index.String(np)},
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.Prefix(txn, npq)) },
		want:  countModel(nameIndex, func(k []byte) bool { return bytes.HasPrefix(k, []byte(np)) }),
	})
	vp := index.Int(r.IntN(8))[:7+r.IntN(2)]
	vpq := valueIndex.QueryKey(vp)
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("CountPrefix(value=%x)", vp),
		count: func(txn ReadTxn) (int, error) { return CountPrefix(txn, tbl, vpq) },
		any:   AnyQuery{Index: "value", Op: QueryPrefix, Key: vp},
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.Prefix(txn, vpq)) },
		want:  countModel(valueIndex, func(k []byte) bool { return bytes.HasPrefix(k, vp) }),
	})
	ip := index.Uint64(uint64(r.IntN(64)))[:7]
	ipq := idIndex.QueryKey(ip)
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("CountPrefix(id=%x)", ip),
		count: func(txn ReadTxn) (int, error) { return CountPrefix(txn, tbl, ipq) },
		any:   AnyQuery{Op: QueryPrefix, Key: ip},
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.Prefix(txn, ipq)) },
		want:  countModel(idIndex, func(k []byte) bool { return bytes.HasPrefix(k, ip) }),
	})
	tp := string(rune('a' + r.IntN(4)))[:r.IntN(2)]
	tpq := tagsIndex.Query(tp)
	cs = append(cs, countCheck{
		name:     fmt.Sprintf("CountPrefix(tags=%q)", tp),
		count:    func(txn ReadTxn) (int, error) { return CountPrefix(txn, tbl, tpq) },
		any:      AnyQuery{Index: "tags", Op: QueryPrefix, Key: index.String(tp)},
		read:     func(txn ReadTxn) []*testObject { return readObjects(tbl.Prefix(txn, tpq)) },
		want:     countModel(tagsIndex, func(k []byte) bool { return bytes.HasPrefix(k, []byte(tp)) }),
		multiKey: true,
	})
	// Ranges [from, to): of ids, of values (non-unique, so the bounds
	// are escaped), of names (strings that are prefixes of one another),
	// now and then the wrong way round.
	lo, hi := uint64(r.IntN(70)), uint64(r.IntN(70))
	if r.IntN(4) != 0 && lo > hi {
		lo, hi = hi, lo
	}
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("CountRange(id=%d..%d)", lo, hi),
		count: func(txn ReadTxn) (int, error) { return CountRange(txn, tbl, idIndex.Query(lo), idIndex.Query(hi)) },
		any:   AnyQuery{Op: QueryRange, Key: index.Uint64(lo), To: index.Uint64(hi)},
		read: func(txn ReadTxn) []*testObject {
			return readObjects(tbl.Range(txn, idIndex.Query(lo), idIndex.Query(hi)))
		},
		want: func(m map[uint64]*testObject) int {
			n := 0
			for id := range m {
				if id >= lo && id < hi {
					n++
				}
			}
			return n
		},
	})
	vlo, vhi := r.IntN(10)-1, r.IntN(10)-1
	if r.IntN(4) != 0 && vlo > vhi {
		vlo, vhi = vhi, vlo
	}
	cs = append(cs, countCheck{
		name: fmt.Sprintf("CountRange(value=%d..%d)", vlo, vhi),
		count: func(txn ReadTxn) (int, error) {
			return CountRange(txn, tbl, valueIndex.Query(vlo), valueIndex.Query(vhi))
		},
		any: AnyQuery{Index: "value", Op: QueryRange, Key: index.Int(vlo), To: index.Int(vhi)},
		read: func(txn ReadTxn) []*testObject {
			return readObjects(tbl.Range(txn, valueIndex.Query(vlo), valueIndex.Query(vhi)))
		},
		want: countModel(valueIndex, func(k []byte) bool {
			return bytes.Compare(k, index.Int(vlo)) >= 0 && bytes.Compare(k, index.Int(vhi)) < 0
		}),
	})
	nlo, nhi := fmt.Sprintf("h%d", r.IntN(80)), fmt.Sprintf("h%d", r.IntN(80))[:1+r.IntN(2)]
	if nlo > nhi {
		nlo, nhi = nhi, nlo
	}
	cs = append(cs, countCheck{
		name: fmt.Sprintf("CountRange(name=%s..%s)", nlo, nhi),
		count: func(txn ReadTxn) (int, error) {
			return CountRange(txn, tbl, nameIndex.Query(nlo), nameIndex.Query(nhi))
		},
		any: AnyQuery{Index: "name", Op: QueryRange, Key: index.String(nlo), To: index.String(nhi)},
		read: func(txn ReadTxn) []*testObject {
			return readObjects(tbl.Range(txn, nameIndex.Query(nlo), nameIndex.Query(nhi)))
		},
		want: countModel(nameIndex, func(k []byte) bool { return string(k) >= nlo && string(k) < nhi }),
	})
	tlo, thi := string(rune('a'+r.IntN(4))), string(rune('a'+r.IntN(5)))
	cs = append(cs, countCheck{
		name: fmt.Sprintf("CountRange(tags=%s..%s)", tlo, thi),
		count: func(txn ReadTxn) (int, error) {
			return CountRange(txn, tbl, tagsIndex.Query(tlo), tagsIndex.Query(thi))
		},
		any: AnyQuery{Index: "tags", Op: QueryRange, Key: index.String(tlo), To: index.String(thi)},
		read: func(txn ReadTxn) []*testObject {
			return readObjects(tbl.Range(txn, tagsIndex.Query(tlo), tagsIndex.Query(thi)))
		},
		want:     countModel(tagsIndex, func(k []byte) bool { return string(k) >= tlo && string(k) < thi }),
		multiKey: true,
	})
	// AnyTable's counts without a typed form: of a lower bound, and of a
	// whole secondary index.
	anyT := AnyTable{Meta: tbl}
	lb := r.IntN(10) - 1
	lbq := AnyQuery{Index: "value", Op: QueryLowerBound, Key: index.Int(lb)}
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("AnyTable.Count(value>=%d)", lb),
		count: func(txn ReadTxn) (int, error) { return anyT.Count(txn, lbq) },
		any:   lbq,
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.LowerBound(txn, valueIndex.Query(lb))) },
		want:  countModel(valueIndex, func(k []byte) bool { return bytes.Compare(k, index.Int(lb)) >= 0 }),
	})
	ilb := uint64(r.IntN(70))
	ilbq := AnyQuery{Op: QueryLowerBound, Key: index.Uint64(ilb)}
	cs = append(cs, countCheck{
		name:  fmt.Sprintf("AnyTable.Count(id>=%d)", ilb),
		count: func(txn ReadTxn) (int, error) { return anyT.Count(txn, ilbq) },
		any:   ilbq,
		read:  func(txn ReadTxn) []*testObject { return readObjects(tbl.LowerBound(txn, idIndex.Query(ilb))) },
		want:  countModel(idIndex, func(k []byte) bool { return bytes.Compare(k, index.Uint64(ilb)) >= 0 }),
	})
	for _, ix := range []string{"value", "tags"} {
		q := AnyQuery{Index: ix}
		cs = append(cs, countCheck{
			name:  fmt.Sprintf("AnyTable.Count(all of %s)", ix),
			count: func(txn ReadTxn) (int, error) { return anyT.Count(txn, q) },
			any:   q,
			read: func(txn ReadTxn) []*testObject {
				seq, err := anyT.Read(txn, q)
				if err != nil {
					panic(err)
				}
				var out []*testObject
				for o := range seq {
					out = append(out, o.Object.(*testObject))
				}
				return out
			},
			want: func(m map[uint64]*testObject) int {
				if ix == "value" {
					return len(m)
				}
				return countModel(tagsIndex, func([]byte) bool { return true })(m)
			},
			multiKey: ix == "tags",
		})
	}
	return cs
}

// TestCountModel: random transactions of inserts, deletes, DeleteAll,
// Restore and aborts on a table with a unique primary (id), a unique
// secondary (name), a non-unique (value) and a multi-key (tags) index.
// After every write, through the write transaction, and after every
// commit or abort, through a read transaction, each count query of every
// kind equals the number of the model's objects it selects, counted one by
// one, and the number of objects the table's read of the same query
// returns; AnyTable.Count and the Watch forms agree.
func TestCountModel(t *testing.T) {
	r := seededRand(t, *countSeedFlag, "strata.count.seed", 30)
	db := New()
	tbl := newTestTable(t, db, "count", nameIndex, valueIndex, tagsIndex)
	any := AnyTable{Meta: tbl}
	committed := map[uint64]*testObject{}
	// multiKey: an object with several tags was committed, or written in
	// the open transaction (pending), so prefix and range counts of the
	// tags index may fail with ErrCannotCount; before, they must not.
	multiKey, pending := false, false

	check := func(step string, txn ReadTxn, model map[uint64]*testObject, multi bool) {
		t.Helper()
		for _, c := range countChecks(r, tbl) {
			want := c.want(model)
			got, err := c.count(txn)
			anyGot, anyErr := any.Count(txn, c.any)
			watchGot, ch, watchErr := any.CountWatch(txn, c.any)
			if c.multiKey && errors.Is(err, ErrCannotCount) {
				if !multi {
					t.Fatalf("%s: %s: %v before any object had several tags", step, c.name, err)
				}
				if !errors.Is(anyErr, ErrCannotCount) || !errors.Is(watchErr, ErrCannotCount) || ch != nil {
					t.Fatalf("%s: AnyTable %s: %v, %v, channel %v; the typed count failed", step, c.name, anyErr, watchErr, ch)
				}
				continue
			}
			if err != nil || anyErr != nil || watchErr != nil {
				t.Fatalf("%s: %s: %v; AnyTable: %v, %v", step, c.name, err, anyErr, watchErr)
			}
			if read := len(c.read(txn)); got != want || read != want || anyGot != want || watchGot != want || ch == nil {
				t.Fatalf("%s: %s = %d (AnyTable %d, watch %d), want %d; the read returns %d",
					step, c.name, got, anyGot, watchGot, want, read)
			}
		}
	}

	steps := 3000
	if testing.Short() {
		steps = 600
	}
	for step := range steps {
		wtxn := db.WriteTxn(tbl)
		model := maps.Clone(committed)
		pending = false
		for w := range 1 + r.IntN(8) {
			switch op := r.IntN(20); {
			case op < 11:
				id := uint64(r.IntN(64))
				o := &testObject{ID: id, Name: fmt.Sprintf("h%d", id), Value: r.IntN(8)}
				var tags []string
				for _, tg := range []string{"a", "b", "c", "d"} {
					// Several tags rarely, so that the tags index
					// counts by prefix for a while.
					if r.IntN(40) == 0 || (len(tags) == 0 && r.IntN(3) == 0) {
						tags = append(tags, tg)
					}
				}
				o.Tags = part.NewSet(tags...)
				pending = pending || len(tags) > 1
				mustInsert(t, tbl, wtxn, o)
				model[id] = o
			case op < 18:
				id := uint64(r.IntN(64))
				_, had, err := tbl.Delete(wtxn, &testObject{ID: id})
				must(t, err)
				if _, ok := model[id]; had != ok {
					t.Fatalf("step %d: Delete(%d) had %v, the model %v", step, id, had, ok)
				}
				delete(model, id)
			case op < 19:
				must(t, tbl.DeleteAll(wtxn))
				clear(model)
			default:
				// DeleteAll, then Restore some objects.
				must(t, tbl.DeleteAll(wtxn))
				clear(model)
				var objs []*testObject
				for _, id := range r.Perm(64)[:r.IntN(20)] {
					o := &testObject{ID: uint64(id), Name: fmt.Sprintf("h%d", id), Value: r.IntN(8),
						Tags: part.NewSet(string(rune('a' + r.IntN(4))))}
					objs = append(objs, o)
					model[o.ID] = o
				}
				slices.SortFunc(objs, func(a, b *testObject) int { return int(a.ID) - int(b.ID) })
				must(t, Restore(wtxn, tbl, func(yield func(*testObject, Revision) bool) {
					for i, o := range objs {
						if !yield(o, Revision(i+1)) {
							return
						}
					}
				}, 0))
			}
			check(fmt.Sprintf("step %d, write %d", step, w), wtxn, model, multiKey || pending)
		}
		if r.IntN(5) == 0 {
			wtxn.Abort()
		} else {
			mustCommit(t, wtxn)
			committed, multiKey = model, multiKey || pending
		}
		check(fmt.Sprintf("step %d, after the transaction", step), db.ReadTxn(), committed, multiKey)
	}
}

// TestCountWatch: the channel of each count closes when a commit changes
// the count, and a count taken again then sees the change; the channel of
// a count of a prefix or range stays open when a commit changes objects
// elsewhere in the index.
func TestCountWatch(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "count", nameIndex, valueIndex)
	objs := make([]*testObject, 0, 40)
	for i := range 40 {
		objs = append(objs, &testObject{ID: uint64(i), Name: fmt.Sprintf("h%02d", i), Value: i % 4})
	}
	mustInsertAll(t, db, tbl, objs...)

	type watched struct {
		name  string
		count func(ReadTxn) (int, <-chan struct{}, error)
	}
	cases := []watched{
		{"CountWatch(value=1)", func(txn ReadTxn) (int, <-chan struct{}, error) {
			return CountWatch(txn, tbl, valueIndex.Query(1))
		}},
		{"CountWatch(name=h50)", func(txn ReadTxn) (int, <-chan struct{}, error) {
			return CountWatch(txn, tbl, nameIndex.Query("h50"))
		}},
		{"CountPrefixWatch(name=h5)", func(txn ReadTxn) (int, <-chan struct{}, error) {
			return CountPrefixWatch(txn, tbl, nameIndex.Query("h5"))
		}},
		{"CountRangeWatch(name=h45..h55)", func(txn ReadTxn) (int, <-chan struct{}, error) {
			return CountRangeWatch(txn, tbl, nameIndex.Query("h45"), nameIndex.Query("h55"))
		}},
		{"CountRangeWatch(value=1..2)", func(txn ReadTxn) (int, <-chan struct{}, error) {
			return CountRangeWatch(txn, tbl, valueIndex.Query(1), valueIndex.Query(2))
		}},
		{"CountAllWatch", func(txn ReadTxn) (int, <-chan struct{}, error) {
			n, ch := CountAllWatch(txn, tbl)
			return n, ch, nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n0, ch, err := c.count(db.ReadTxn())
			must(t, err)
			if strings.Contains(c.name, "name=") {
				// An object elsewhere in the index: the channel of a
				// count of a key, prefix or range of names stays open.
				// (Those of the value index are the node that
				// branches on values, as ListWatch's: any value's
				// change may close them.)
				mustInsertAll(t, db, tbl, &testObject{ID: 1000, Name: "a", Value: 3})
				select {
				case <-ch:
					t.Fatalf("the channel closed on a change elsewhere")
				default:
				}
			}
			// An object the count counts.
			mustInsertAll(t, db, tbl, &testObject{ID: 50, Name: "h50", Value: 1})
			select {
			case <-ch:
			default:
				t.Fatalf("the channel is open after a change of the count")
			}
			n1, _, err := c.count(db.ReadTxn())
			must(t, err)
			if n1 != n0+1 {
				t.Fatalf("count %d after the insert, was %d", n1, n0)
			}
			wtxn := db.WriteTxn(tbl)
			_, _, err = tbl.Delete(wtxn, &testObject{ID: 50})
			must(t, err)
			_, _, err = tbl.Delete(wtxn, &testObject{ID: 1000})
			must(t, err)
			mustCommit(t, wtxn)
		})
	}
}

// TestCountErrors: a count an index cannot make returns ErrCannotCount,
// through the typed functions and AnyTable, and reads nothing else; a bad
// AnyQuery returns ErrInvalidQuery or ErrIndexNotFound.
func TestCountErrors(t *testing.T) {
	db := New()
	routes, cidr := newRouteTable(t, db, false)
	wtxn := db.WriteTxn(routes)
	mustInsertRoutes(t, routes, wtxn, &route{ID: 1, Prefix: pfx("10.0.0.0/8")})
	rtxn := mustCommit(t, wtxn)
	for name, err := range map[string]error{
		"Count":          second(Count(rtxn, routes, cidr.Query(pfx("10.0.0.0/8")))),
		"CountPrefix":    second(CountPrefix(rtxn, routes, cidr.Query(pfx("10.0.0.0/8")))),
		"CountRange":     second(CountRange(rtxn, routes, cidr.Query(pfx("10.0.0.0/8")), cidr.Query(pfx("11.0.0.0/8")))),
		"Count of addr":  second(Count(rtxn, routes, cidr.Containing(addr("10.1.2.3")))),
		"AnyTable.Count": second(AnyTable{Meta: routes}.Count(rtxn, AnyQuery{Index: "cidrs", Op: QueryList, Key: index.Key{1}})),
	} {
		if !errors.Is(err, ErrCannotCount) {
			t.Errorf("%s of an LPM index: %v, want ErrCannotCount", name, err)
		}
	}
	// The primary index of the same table counts.
	if n, err := Count(rtxn, routes, routeID.Query(1)); n != 1 || err != nil {
		t.Errorf("Count(id=1) = %d, %v", n, err)
	}

	// An object with several tags: prefix and range counts of the tags
	// index fail, through a write transaction and after it commits; a count
	// of one tag does not.
	tbl := newTestTable(t, db, "tagged", tagsIndex)
	rtxn = mustInsertAll(t, db, tbl, &testObject{ID: 1, Tags: part.NewSet("a")})
	if n, err := CountPrefix(rtxn, tbl, tagsIndex.Query("")); n != 1 || err != nil {
		t.Fatalf("CountPrefix of one-tag objects = %d, %v", n, err)
	}
	wtxn = db.WriteTxn(tbl)
	mustInsert(t, tbl, wtxn, &testObject{ID: 2, Tags: part.NewSet("a", "b")})
	for _, txn := range []ReadTxn{wtxn, mustCommit(t, wtxn)} {
		if _, err := CountPrefix(txn, tbl, tagsIndex.Query("")); !errors.Is(err, ErrCannotCount) {
			t.Errorf("CountPrefix of a multi-key index: %v, want ErrCannotCount", err)
		}
		if _, _, err := CountRangeWatch(txn, tbl, tagsIndex.Query("a"), tagsIndex.Query("c")); !errors.Is(err, ErrCannotCount) {
			t.Errorf("CountRangeWatch of a multi-key index: %v, want ErrCannotCount", err)
		}
		if n, err := Count(txn, tbl, tagsIndex.Query("a")); n != 2 || err != nil {
			t.Errorf("Count(tags=a) = %d, %v; want 2", n, err)
		}
	}

	any := AnyTable{Meta: tbl}
	for _, c := range []struct {
		q    AnyQuery
		want error
	}{
		{AnyQuery{Op: QueryRange + 1}, ErrInvalidQuery},
		{AnyQuery{Op: QueryPrefix, To: index.Key{1}}, ErrInvalidQuery},
		{AnyQuery{Op: QueryAll, After: index.Key{1}}, ErrInvalidQuery},
		{AnyQuery{Index: "nope"}, ErrIndexNotFound},
		{AnyQuery{Index: "tags"}, ErrCannotCount},
	} {
		if _, ch, err := any.CountWatch(db.ReadTxn(), c.q); !errors.Is(err, c.want) || ch != nil {
			t.Errorf("AnyTable.CountWatch(%+v): %v, %v; want %v", c.q, ch, err, c.want)
		}
	}
	if n := CountAll(db.ReadTxn(), tbl); n != 2 {
		t.Errorf("the counts changed the table: %d objects", n)
	}
}

func second[A, B any](_ A, b B) B { return b }
