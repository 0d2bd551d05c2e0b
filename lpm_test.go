package strata

import (
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/index"
)

// route is the object of the LPM index tests: an ID and one prefix, or
// several (Extra).
type route struct {
	ID     uint64
	Prefix netip.Prefix
	Extra  []netip.Prefix
}

func (r *route) String() string { return fmt.Sprintf("%d:%v", r.ID, r.Prefix) }

var (
	routeID = Index[*route, uint64]{
		Name:       "id",
		FromObject: func(r *route) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	routeCIDR = LPMIndex[*route]{
		Name:       "cidr",
		FromObject: routePrefixes,
		Unique:     true,
	}
	routeCIDRs = LPMIndex[*route]{
		Name:       "cidrs",
		FromObject: routePrefixes,
	}
)

func routePrefixes(r *route) PrefixSet {
	switch {
	case r.Extra != nil:
		return NewPrefixSet(append([]netip.Prefix{r.Prefix}, r.Extra...)...)
	case r.Prefix.IsValid() || r.Prefix != (netip.Prefix{}):
		return PrefixSetOf(r.Prefix)
	}
	return PrefixSet{}
}

func newRouteTable(t testing.TB, db *DB, unique bool) (RWTable[*route], LPMIndex[*route]) {
	t.Helper()
	ix := routeCIDRs
	if unique {
		ix = routeCIDR
	}
	tbl, err := NewTable(db, "routes", routeID, ix)
	if err != nil {
		t.Fatal(err)
	}
	return tbl, ix
}

func mustInsertRoutes(t testing.TB, tbl RWTable[*route], txn WriteTxn, rs ...*route) {
	t.Helper()
	for _, r := range rs {
		if _, _, err := tbl.Insert(txn, r); err != nil {
			t.Fatalf("Insert(%v): %v", r, err)
		}
	}
}

func routeIDs(seq func(func(*route, Revision) bool)) []uint64 {
	var ids []uint64
	for r := range seq {
		ids = append(ids, r.ID)
	}
	return ids
}

var (
	pfx  = netip.MustParsePrefix
	addr = netip.MustParseAddr
)

func TestLPMIndexLookups(t *testing.T) {
	for _, unique := range []bool{true, false} {
		t.Run(fmt.Sprintf("unique=%v", unique), func(t *testing.T) {
			db := New()
			tbl, ix := newRouteTable(t, db, unique)
			w := db.WriteTxn(tbl)
			mustInsertRoutes(t, tbl, w,
				&route{ID: 1, Prefix: pfx("0.0.0.0/0")},
				&route{ID: 2, Prefix: pfx("10.0.0.0/8")},
				&route{ID: 3, Prefix: pfx("10.0.0.0/24")},
				&route{ID: 4, Prefix: pfx("10.0.0.1/32")},
				&route{ID: 5, Prefix: pfx("192.168.0.0/24")},
				&route{ID: 6, Prefix: pfx("10.128.0.0/9")},
				&route{ID: 7, Prefix: pfx("2001:db8::/32")},
				&route{ID: 8, Prefix: pfx("::/0")},
			)
			txn, err := w.Commit()
			must(t, err)

			get := func(a string) uint64 {
				r, _, found := tbl.Get(txn, ix.Containing(addr(a)))
				if !found {
					return 0
				}
				return r.ID
			}
			for _, c := range []struct {
				addr string
				want uint64
				all  []uint64
			}{
				{"10.0.0.1", 4, []uint64{4, 3, 2, 1}},
				{"10.0.0.2", 3, []uint64{3, 2, 1}},
				{"10.0.1.2", 2, []uint64{2, 1}},
				{"10.200.1.2", 6, []uint64{6, 2, 1}},
				{"11.0.0.0", 1, []uint64{1}},
				{"192.168.0.255", 5, []uint64{5, 1}},
				{"192.168.1.0", 1, []uint64{1}},
				{"2001:db8::1", 7, []uint64{7, 8}},
				{"2001:db9::1", 8, []uint64{8}},
				{"::ffff:10.0.0.1", 4, []uint64{4, 3, 2, 1}},
			} {
				if got := get(c.addr); got != c.want {
					t.Errorf("Get(Containing(%s)) = %d, want %d", c.addr, got, c.want)
				}
				if got := routeIDs(tbl.List(txn, ix.Containing(addr(c.addr)))); !slices.Equal(got, c.all) {
					t.Errorf("List(Containing(%s)) = %v, want %v", c.addr, got, c.all)
				}
			}
			if got := routeIDs(tbl.List(txn, ix.ContainingPrefix(pfx("10.0.0.0/16")))); !slices.Equal(got, []uint64{2, 1}) {
				t.Errorf("List(ContainingPrefix(10.0.0.0/16)) = %v", got)
			}
			if got := routeIDs(tbl.List(txn, ix.ContainingPrefix(pfx("10.0.0.0/24")))); !slices.Equal(got, []uint64{3, 2, 1}) {
				t.Errorf("List(ContainingPrefix(10.0.0.0/24)) = %v", got)
			}
			if r, _, found := tbl.Get(txn, ix.Query(pfx("10.0.0.0/24"))); !found || r.ID != 3 {
				t.Errorf("Get(Query(10.0.0.0/24)) = %v, %v", r, found)
			}
			if _, _, found := tbl.Get(txn, ix.Query(pfx("10.0.0.0/16"))); found {
				t.Errorf("Get(Query(10.0.0.0/16)) found a prefix that is not there")
			}
			if r, _, found := tbl.Get(txn, ix.Query(pfx("10.0.0.77/24"))); !found || r.ID != 3 {
				t.Errorf("Get(Query(10.0.0.77/24)) = %v, %v: a query is masked", r, found)
			}
			// Within: a prefix and its subnets, in index order.
			if got := routeIDs(tbl.Prefix(txn, ix.Query(pfx("10.0.0.0/8")))); !slices.Equal(got, []uint64{2, 3, 4, 6}) {
				t.Errorf("Prefix(Query(10.0.0.0/8)) = %v", got)
			}
			if got := routeIDs(tbl.ReversePrefix(txn, ix.Query(pfx("10.0.0.0/8")))); !slices.Equal(got, []uint64{6, 4, 3, 2}) {
				t.Errorf("ReversePrefix(Query(10.0.0.0/8)) = %v", got)
			}
			if got := routeIDs(tbl.Prefix(txn, ix.Query(pfx("0.0.0.0/0")))); !slices.Equal(got, []uint64{1, 2, 3, 4, 6, 5}) {
				t.Errorf("Prefix(Query(0.0.0.0/0)) = %v", got)
			}
			if got := routeIDs(tbl.Prefix(txn, ix.Query(pfx("::/0")))); !slices.Equal(got, []uint64{8, 7}) {
				t.Errorf("Prefix(Query(::/0)) = %v", got)
			}
			if got := routeIDs(tbl.LowerBound(txn, ix.Query(pfx("10.0.0.1/32")))); !slices.Equal(got, []uint64{4, 6, 5, 8, 7}) {
				t.Errorf("LowerBound(Query(10.0.0.1/32)) = %v", got)
			}
		})
	}
}

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestLPMIndexBadPrefixes: an object with an invalid prefix or one with
// host bits is refused with a typed error, and the table is as before.
func TestLPMIndexBadPrefixes(t *testing.T) {
	db := New()
	tbl, ix := newRouteTable(t, db, true)
	w := db.WriteTxn(tbl)
	mustInsertRoutes(t, tbl, w, &route{ID: 1, Prefix: pfx("10.0.0.0/8")}, &route{ID: 2, Prefix: pfx("10.1.0.0/16")})
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r    *route
		want error
		text string
	}{
		{&route{ID: 1, Prefix: pfx("10.0.0.1/8")}, ErrPrefixHostBits, "10.0.0.1/8"},
		{&route{ID: 3, Prefix: pfx("::ffff:10.0.0.1/104")}, ErrPrefixHostBits, "::ffff:10.0.0.1/104"},
		{&route{ID: 3, Prefix: netip.PrefixFrom(addr("10.0.0.0"), 33)}, ErrInvalidPrefix, ""},
		{&route{ID: 1, Prefix: netip.Prefix{}, Extra: []netip.Prefix{pfx("10.2.0.0/16")}}, ErrInvalidPrefix, ""},
		{&route{ID: 3, Prefix: pfx("10.3.0.0/16"), Extra: []netip.Prefix{pfx("10.4.0.1/16")}}, ErrPrefixHostBits, "10.4.0.1/16"},
		{&route{ID: 3, Prefix: pfx("10.3.0.0/16"), Extra: []netip.Prefix{pfx("10.1.0.0/16")}}, ErrUniqueConstraint, `"10.1.0.0/16"`},
	} {
		w := db.WriteTxn(tbl)
		_, _, err := tbl.Insert(w, c.r)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) || !strings.Contains(err.Error(), `index "cidr"`) {
			t.Errorf("Insert(%v %v) = %v, want %v naming %s", c.r, c.r.Extra, err, c.want, c.text)
		}
		txn, err := w.Commit()
		must(t, err)
		if n := tbl.NumObjects(txn); n != 2 {
			t.Errorf("after the failed insert of %v, the table has %d objects", c.r, n)
		}
		if got := routeIDs(tbl.List(txn, ix.Containing(addr("10.1.2.3")))); !slices.Equal(got, []uint64{2, 1}) {
			t.Errorf("after the failed insert of %v, Containing(10.1.2.3) = %v", c.r, got)
		}
		if got := routeIDs(tbl.Prefix(txn, ix.Query(pfx("0.0.0.0/0")))); !slices.Equal(got, []uint64{1, 2}) {
			t.Errorf("after the failed insert of %v, the index holds %v", c.r, got)
		}
	}
	// Restore checks the prefixes too.
	db2 := New()
	tbl2, _ := newRouteTable(t, db2, true)
	w = db2.WriteTxn(tbl2)
	err := Restore(w, tbl2, func(yield func(*route, Revision) bool) {
		_ = yield(&route{ID: 1, Prefix: pfx("10.0.0.0/8")}, 1) && yield(&route{ID: 2, Prefix: pfx("10.0.0.1/8")}, 2)
	}, 2)
	if !errors.Is(err, ErrPrefixHostBits) {
		t.Errorf("Restore of a prefix with host bits: %v", err)
	}
	w.Abort()
}

func TestLPMIndexDefinition(t *testing.T) {
	db := New()
	if _, err := NewTable(db, "t1", Indexer[*route](routeCIDR)); !errors.Is(err, ErrPrimaryIndexLPM) {
		t.Errorf("NewTable with an LPM primary index: %v", err)
	}
	if _, err := NewTable(db, "t2", routeID, LPMIndex[*route]{Name: "cidr"}); !errors.Is(err, ErrNoFromObject) {
		t.Errorf("NewTable with an LPM index without FromObject: %v", err)
	}
	if _, err := NewTable(db, "t3", routeID, LPMIndex[*route]{Name: "9cidr", FromObject: routePrefixes}); !errors.Is(err, ErrInvalidIndexName) {
		t.Errorf("NewTable with a bad LPM index name: %v", err)
	}
}

// TestLPMIndexBadQueries: queries of invalid prefixes and addresses select
// nothing; a Containing query given to a read that is not Get or List
// panics, as the doc says.
func TestLPMIndexBadQueries(t *testing.T) {
	db := New()
	tbl, ix := newRouteTable(t, db, false)
	w := db.WriteTxn(tbl)
	mustInsertRoutes(t, tbl, w, &route{ID: 1, Prefix: pfx("0.0.0.0/0")}, &route{ID: 2, Prefix: pfx("::/0")})
	txn, err := w.Commit()
	must(t, err)
	for name, q := range map[string]Query[*route]{
		"Query(invalid)":            ix.Query(netip.Prefix{}),
		"Query(/33)":                ix.Query(netip.PrefixFrom(addr("10.0.0.0"), 33)),
		"Containing(invalid)":       ix.Containing(netip.Addr{}),
		"ContainingPrefix(invalid)": ix.ContainingPrefix(netip.Prefix{}),
		"raw key":                   ix.QueryKey(index.Key{0x04, 1, 2}),
		"raw containing key":        ix.QueryKey(index.Key{0x84, 1, 2}),
	} {
		if _, _, found := tbl.Get(txn, q); found {
			t.Errorf("Get(%s) found an object", name)
		}
		if got := routeIDs(tbl.List(txn, q)); len(got) != 0 {
			t.Errorf("List(%s) = %v", name, got)
		}
		if !isContainingKey(q.Key()) {
			if got := routeIDs(tbl.Prefix(txn, q)); len(got) != 0 {
				t.Errorf("Prefix(%s) = %v", name, got)
			}
		}
	}
	q := ix.Containing(addr("10.1.2.3"))
	for name, read := range map[string]func(){
		"Prefix":            func() { tbl.Prefix(txn, q) },
		"ReversePrefix":     func() { tbl.ReversePrefix(txn, q) },
		"LowerBound":        func() { tbl.LowerBound(txn, q) },
		"ReverseLowerBound": func() { tbl.ReverseLowerBound(txn, q) },
		"Range":             func() { tbl.Range(txn, ix.Query(pfx("0.0.0.0/0")), q) },
		"DeletePrefix": func() {
			w := db.WriteTxn(tbl)
			defer w.Abort()
			_, _ = tbl.DeletePrefix(w, q)
		},
	} {
		func() {
			defer func() {
				if msg, _ := recover().(string); !strings.Contains(msg, "Containing query") {
					t.Errorf("%s of a Containing query: panic %q", name, msg)
				}
			}()
			read()
		}()
	}
}

func TestLPMIndexKeysAsText(t *testing.T) {
	ix := routeCIDR
	for _, c := range []struct{ text, shown string }{
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.1.2.3/8", "10.0.0.0/8"}, // a query is masked
		{"10.1.2.3", "10.1.2.3"},
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"fe80::1%eth0", "fe80::1"},
		{"2001:db8::/32", "2001:db8::/32"},
	} {
		k, err := ix.fromString(c.text)
		if err != nil {
			t.Errorf("fromString(%q): %v", c.text, err)
			continue
		}
		if got := ix.KeyString(k); got != c.shown {
			t.Errorf("KeyString(fromString(%q)) = %q, want %q", c.text, got, c.shown)
		}
	}
	if k, want := ix.fromString, ix.Containing(addr("10.1.2.3")).Key(); true {
		if got, _ := k("10.1.2.3"); !slices.Equal(got, want) {
			t.Errorf("fromString(10.1.2.3) = %x, want Containing's %x", got, want)
		}
	}
	for _, bad := range []string{"", "10.0.0", "10.0.0.0/33", "host", "10.0.0.0/8/8"} {
		if _, err := ix.fromString(bad); !errors.Is(err, index.ErrParseKey) {
			t.Errorf("fromString(%q): %v, want ErrParseKey", bad, err)
		}
	}
	// A key with no text of its own is shown in hex.
	if got := ix.KeyString(ix.ContainingPrefix(pfx("10.0.0.0/8")).Key()); got != index.Key(ix.ContainingPrefix(pfx("10.0.0.0/8")).Key()).String() {
		t.Errorf("KeyString(ContainingPrefix) = %q", got)
	}
}

// TestLPMIndexAnyTable reads an LPM index through AnyTable: text keys,
// cursors, watches and refused queries.
func TestLPMIndexAnyTable(t *testing.T) {
	for _, unique := range []bool{true, false} {
		t.Run(fmt.Sprintf("unique=%v", unique), func(t *testing.T) {
			db := New()
			tbl, ix := newRouteTable(t, db, unique)
			w := db.WriteTxn(tbl)
			rs := []*route{
				{ID: 1, Prefix: pfx("10.0.0.0/8")},
				{ID: 2, Prefix: pfx("10.1.0.0/16")},
				{ID: 3, Prefix: pfx("10.1.2.0/24")},
				{ID: 4, Prefix: pfx("10.2.0.0/16")},
				{ID: 5, Prefix: pfx("2001:db8::/32")},
			}
			if !unique {
				rs = append(rs, &route{ID: 6, Prefix: pfx("10.1.0.0/16")}, &route{ID: 7, Prefix: pfx("10.1.0.0/16")})
			}
			mustInsertRoutes(t, tbl, w, rs...)
			txn, err := w.Commit()
			must(t, err)
			at, err := db.AnyTable("routes")
			must(t, err)
			name := ix.Name
			if info := at.Indexes()[1]; !info.LPM || !info.Text || info.KeyType != reflect.TypeFor[netip.Prefix]() || info.Unique != unique {
				t.Errorf("IndexInfo = %+v", info)
			}
			if info := at.Indexes()[0]; info.LPM {
				t.Errorf("the primary index is shown as LPM")
			}
			ids := func(seq func(func(any, Revision) bool), err error) []uint64 {
				t.Helper()
				must(t, err)
				var ids []uint64
				for o := range seq {
					ids = append(ids, o.(*route).ID)
				}
				return ids
			}
			wantContaining := []uint64{3, 2, 1}
			if !unique {
				wantContaining = []uint64{3, 2, 6, 7, 1}
			}
			if got := ids(at.List(txn, name, "10.1.2.3")); !slices.Equal(got, wantContaining) {
				t.Errorf("List 10.1.2.3 = %v, want %v", got, wantContaining)
			}
			if o, _, found, err := at.Get(txn, name, "10.1.2.3"); err != nil || !found || o.(*route).ID != 3 {
				t.Errorf("Get 10.1.2.3 = %v, %v, %v", o, found, err)
			}
			if o, _, found, err := at.Get(txn, name, "10.1.0.0/16"); err != nil || !found || o.(*route).ID != 2 {
				t.Errorf("Get 10.1.0.0/16 = %v, %v, %v", o, found, err)
			}
			wantWithin := []uint64{2, 3}
			if !unique {
				wantWithin = []uint64{2, 6, 7, 3}
			}
			if got := ids(at.Prefix(txn, name, "10.1.0.0/16")); !slices.Equal(got, wantWithin) {
				t.Errorf("Prefix 10.1.0.0/16 = %v, want %v", got, wantWithin)
			}
			if got := ids(at.LowerBound(txn, name, "10.1.2.0/24")); !slices.Equal(got, []uint64{3, 4, 5}) {
				t.Errorf("LowerBound 10.1.2.0/24 = %v", got)
			}
			if _, err := at.Prefix(txn, name, "10.1"); !errors.Is(err, index.ErrParseKey) {
				t.Errorf("Prefix of bad text: %v", err)
			}
			// Pages of one object read all, in order.
			for _, c := range []struct {
				text string
				op   QueryOp
				want []uint64
			}{{"10.1.2.3", QueryList, wantContaining}, {"10.1.0.0/16", QueryPrefix, wantWithin}} {
				key, err := at.ParseKey(name, c.text)
				must(t, err)
				q := AnyQuery{Index: name, Op: c.op, Key: key}
				var got []uint64
				for range 10 {
					seq, err := at.Read(txn, q)
					must(t, err)
					var last *AnyObject
					for o := range seq {
						got = append(got, o.Object.(*route).ID)
						last = &o
						break
					}
					if last == nil {
						break
					}
					q.After = last.Cursor
				}
				if !slices.Equal(got, c.want) {
					t.Errorf("%v %s page by page = %v, want %v", c.op, c.text, got, c.want)
				}
			}
			// A cursor that is not one of the index's reads nothing.
			seq, err := at.Read(txn, AnyQuery{Index: name, Op: QueryList, Key: ix.Containing(addr("10.1.2.3")).Key(), After: []byte("x")})
			must(t, err)
			for o := range seq {
				t.Errorf("a read after a foreign cursor returned %v", o.Object)
			}
			// An address key is for list only.
			key, _ := at.ParseKey(name, "10.1.2.3")
			for _, op := range []QueryOp{QueryPrefix, QueryLowerBound, QueryRange} {
				q := AnyQuery{Index: name, Op: op, Key: key}
				if op == QueryRange {
					q.To = key
				}
				if _, err := at.Read(txn, q); !errors.Is(err, ErrInvalidQuery) {
					t.Errorf("Read %v of an address: %v, want ErrInvalidQuery", op, err)
				}
			}
			// ReadWatch of an address: the channel closes when a prefix
			// of its family changes (and may close on other changes); that
			// of a prefix only when its subnets change.
			_, ch, err := at.ReadWatch(txn, AnyQuery{Index: name, Op: QueryList, Key: key})
			must(t, err)
			_, prefixCh, err := at.ReadWatch(txn, AnyQuery{Index: name, Op: QueryPrefix, Key: ix.Query(pfx("10.1.0.0/16")).Key()})
			must(t, err)
			w = db.WriteTxn(tbl)
			mustInsertRoutes(t, tbl, w, &route{ID: 10, Prefix: pfx("2001:db8:1::/48")})
			_, err = w.Commit()
			must(t, err)
			if closed(prefixCh) {
				t.Errorf("an IPv6 insert closed the watch of Prefix 10.1.0.0/16")
			}
			w = db.WriteTxn(tbl)
			mustInsertRoutes(t, tbl, w, &route{ID: 11, Prefix: pfx("10.1.2.0/28")})
			_, err = w.Commit()
			must(t, err)
			if !closed(ch) || !closed(prefixCh) {
				t.Errorf("the insert of 10.1.2.0/28 left a watch open: %v %v", closed(ch), closed(prefixCh))
			}
		})
	}
}

// TestLPMIndexWatch: the channels of the typed reads close when their
// answer may change.
func TestLPMIndexWatch(t *testing.T) {
	for _, unique := range []bool{true, false} {
		t.Run(fmt.Sprintf("unique=%v", unique), func(t *testing.T) {
			db := New()
			tbl, ix := newRouteTable(t, db, unique)
			w := db.WriteTxn(tbl)
			mustInsertRoutes(t, tbl, w,
				&route{ID: 1, Prefix: pfx("10.0.0.0/8")},
				&route{ID: 2, Prefix: pfx("10.1.0.0/16")},
				&route{ID: 3, Prefix: pfx("10.200.0.0/16")},
				&route{ID: 4, Prefix: pfx("2001:db8::/32")},
			)
			txn, err := w.Commit()
			must(t, err)
			write := func(f func(w WriteTxn)) {
				t.Helper()
				w := db.WriteTxn(tbl)
				f(w)
				txn, err = w.Commit()
				must(t, err)
			}
			_, _, getCh, found := tbl.GetWatch(txn, ix.Containing(addr("10.1.2.3")))
			_, listCh := tbl.ListWatch(txn, ix.Containing(addr("10.1.2.3")))
			_, _, exactCh, _ := tbl.GetWatch(txn, ix.Query(pfx("10.1.0.0/16")))
			_, withinCh := tbl.PrefixWatch(txn, ix.Query(pfx("10.1.0.0/16")))
			if !found {
				t.Fatal("GetWatch(Containing(10.1.2.3)) found nothing")
			}
			// A change of the other family closes none of those that
			// watch less than the whole family.
			all := []<-chan struct{}{getCh, exactCh, withinCh}
			write(func(w WriteTxn) { mustInsertRoutes(t, tbl, w, &route{ID: 5, Prefix: pfx("2001:db8:1::/48")}) })
			for i, ch := range all {
				if closed(ch) {
					t.Errorf("channel %d closed by an IPv6 insert", i)
				}
			}
			// A new, more specific match closes the Containing reads'
			// channels and that of the Prefix read, not the exact one.
			write(func(w WriteTxn) { mustInsertRoutes(t, tbl, w, &route{ID: 6, Prefix: pfx("10.1.2.0/24")}) })
			if !closed(getCh) || !closed(listCh) || !closed(withinCh) {
				t.Errorf("the insert of 10.1.2.0/24 left a channel open: %v %v %v", closed(getCh), closed(listCh), closed(withinCh))
			}
			if unique && closed(exactCh) {
				t.Errorf("the insert of 10.1.2.0/24 closed the channel of Get(Query(10.1.0.0/16))")
			}
			// Deleting the exact prefix closes its channel.
			write(func(w WriteTxn) {
				if _, _, err := tbl.Delete(w, &route{ID: 2}); err != nil {
					t.Fatal(err)
				}
			})
			if !closed(exactCh) {
				t.Errorf("deleting 10.1.0.0/16 left Get(Query(10.1.0.0/16))'s channel open")
			}
			if r, _, found := tbl.Get(txn, ix.Containing(addr("10.1.9.9"))); !found || r.ID != 1 {
				t.Errorf("after the delete, Containing(10.1.9.9) = %v, %v", r, found)
			}
		})
	}
}

// TestLPMIndexDeletesAndFeeds: deletes by Containing (DeleteMatches) and by
// Prefix of a Query (DeletePrefix) remove the objects they read, keep the
// primary index right, and reach a change feed.
func TestLPMIndexDeletesAndFeeds(t *testing.T) {
	db := New()
	tbl, ix := newRouteTable(t, db, false)
	w := db.WriteTxn(tbl)
	feed, err := tbl.Changes(w)
	must(t, err)
	defer feed.Close()
	mustInsertRoutes(t, tbl, w,
		&route{ID: 1, Prefix: pfx("10.0.0.0/8")},
		&route{ID: 2, Prefix: pfx("10.1.0.0/16")},
		&route{ID: 3, Prefix: pfx("10.1.2.0/24"), Extra: []netip.Prefix{pfx("192.168.0.0/16")}},
		&route{ID: 4, Prefix: pfx("10.2.0.0/16")},
		&route{ID: 5, Prefix: pfx("192.168.1.0/24")},
	)
	txn, err := w.Commit()
	must(t, err)
	changes, _ := feed.Next(txn)
	if n := len(slices.Collect(func(yield func(Change[*route]) bool) {
		for c := range changes {
			if !yield(c) {
				return
			}
		}
	})); n != 5 {
		t.Errorf("the feed has %d changes, want 5", n)
	}

	w = db.WriteTxn(tbl)
	n, err := tbl.DeleteMatches(w, ix.Containing(addr("10.1.2.3")))
	if err != nil || n != 3 {
		t.Errorf("DeleteMatches(Containing(10.1.2.3)) = %d, %v; want 3", n, err)
	}
	n, err = tbl.DeletePrefix(w, ix.Query(pfx("192.168.0.0/16")))
	if err != nil || n != 1 {
		t.Errorf("DeletePrefix(Query(192.168.0.0/16)) = %d, %v; want 1 (5; 3 is gone)", n, err)
	}
	txn, err = w.Commit()
	must(t, err)
	if got := routeIDs(tbl.All(txn)); !slices.Equal(got, []uint64{4}) {
		t.Errorf("after the deletes the table holds %v, want [4]", got)
	}
	if got := routeIDs(tbl.Prefix(txn, ix.Query(pfx("0.0.0.0/0")))); !slices.Equal(got, []uint64{4}) {
		t.Errorf("after the deletes the index holds %v, want [4]", got)
	}
	changes, _ = feed.Next(txn)
	var deleted []uint64
	for c := range changes {
		if !c.Deleted {
			t.Errorf("unexpected upsert of %v", c.Object)
		}
		deleted = append(deleted, c.Object.ID)
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, []uint64{1, 2, 3, 5}) {
		t.Errorf("the feed's deletes: %v, want [1 2 3 5]", deleted)
	}
}

// TestLPMIndexRestore: Restore builds the LPM index of the objects it
// adds, as a persistence layer's load does.
func TestLPMIndexRestore(t *testing.T) {
	db := New()
	tbl, ix := newRouteTable(t, db, true)
	rs := []*route{
		{ID: 1, Prefix: pfx("10.0.0.0/8")},
		{ID: 2, Prefix: pfx("10.1.0.0/16"), Extra: []netip.Prefix{pfx("2001:db8::/32")}},
		{ID: 3, Prefix: pfx("10.1.2.0/24")},
	}
	w := db.WriteTxn(tbl)
	must(t, Restore(w, tbl, func(yield func(*route, Revision) bool) {
		for i, r := range rs {
			if !yield(r, Revision(10+i)) {
				return
			}
		}
	}, 20))
	txn, err := w.Commit()
	must(t, err)
	if got := routeIDs(tbl.List(txn, ix.Containing(addr("10.1.2.3")))); !slices.Equal(got, []uint64{3, 2, 1}) {
		t.Errorf("after Restore, Containing(10.1.2.3) = %v", got)
	}
	if r, rev, found := tbl.Get(txn, ix.Containing(addr("2001:db8::1"))); !found || r.ID != 2 || rev != 11 {
		t.Errorf("after Restore, Containing(2001:db8::1) = %v at %d, %v", r, rev, found)
	}
	// A unique LPM index refuses two objects of one prefix in Restore too.
	db2 := New()
	tbl2, _ := newRouteTable(t, db2, true)
	w = db2.WriteTxn(tbl2)
	defer w.Abort()
	err = Restore(w, tbl2, func(yield func(*route, Revision) bool) {
		_ = yield(&route{ID: 1, Prefix: pfx("10.0.0.0/8")}, 1) && yield(&route{ID: 2, Prefix: pfx("::ffff:10.0.0.0/104")}, 2)
	}, 2)
	if !errors.Is(err, ErrUniqueConstraint) {
		t.Errorf("Restore of two objects of 10.0.0.0/8: %v", err)
	}
}
