package strata

// Tests of tables (table.go): registering many tables and registering
// them while the database is in use.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConcurrentTableRegistration registers tables (NewTable) while other
// goroutines write and read existing ones. Registration must not disturb
// the existing tables (pairs stay atomic, nothing is lost), a new table
// must be usable at once, a snapshot taken before the registration must
// read the new table as empty, two concurrent registrations of one name must
// give one table and one ErrDuplicateTable, and Tables must list every
// table once.
func TestConcurrentTableRegistration(t *testing.T) {
	db := New()
	tblA := newTestTable(t, db, "reg-a")
	tblB := newConcPairTable(t, db, "reg-b")
	const keys = 8
	seed := concSeed(t)
	f := &concFailer{t: t}
	deadline := time.Now().Add(concDuration(time.Second, 3*time.Second))
	var gen, progress, commits atomic.Uint64
	var wg sync.WaitGroup

	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for time.Now().Before(deadline) && !f.stopped() {
				var txn WriteTxn
				if r.IntN(2) == 0 {
					txn = db.WriteTxn(tblA, tblB)
				} else {
					txn = db.WriteTxn(tblB, tblA)
				}
				k, g := r.Uint64N(keys), gen.Add(1)
				_, _, errA := tblA.Insert(txn, &testObject{ID: k, Value: int(g)})
				_, _, errB := tblB.Insert(txn, concPair{ID: k, Gen: g})
				if errA != nil || errB != nil {
					f.errorf("insert: %v, %v", errA, errB)
				}
				if _, err := txn.Commit(); err != nil {
					f.errorf("commit: %v", err)
				}
				commits.Add(1)
				progress.Add(1)
			}
		}()
	}
	checkPairs := func(rtxn ReadTxn) {
		for k := range uint64(keys) {
			a, _, okA := tblA.Get(rtxn, idIndex.Query(k))
			b, _, okB := tblB.Get(rtxn, concPairID.Query(k))
			if okA != okB || (okA && uint64(a.Value) != b.Gen) {
				f.errorf("pair %d: A %v %v, B %v %v", k, a, okA, b, okB)
			}
		}
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && !f.stopped() {
				rtxn := db.ReadTxn()
				checkPairs(rtxn)
				// Every listed table can be read through any snapshot, also
				// one taken before the table was registered.
				for _, m := range db.Tables() {
					n := m.NumObjects(rtxn)
					if n < 0 || (n > 0 && m.Revision(rtxn) == 0) {
						f.errorf("table %s: %d objects at revision %d", m.Name(), n, m.Revision(rtxn))
					}
				}
				progress.Add(1)
			}
		}()
	}

	type registered struct {
		name string
		id   uint64
		tbl  TableMeta
	}
	const dupNames = 20
	var dupWins [dupNames]atomic.Int32
	results := make([][]registered, 2)
	minTables := 20
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(100+g)))
			for i := 0; (i < minTables || time.Now().Before(deadline)) && !f.stopped(); i++ {
				if i < dupNames {
					_, err := NewTable(db, fmt.Sprintf("reg-dup-%d", i), concPairID)
					switch {
					case err == nil:
						dupWins[i].Add(1)
					case !errors.Is(err, ErrDuplicateTable):
						f.errorf("duplicate registration: %v", err)
					}
				}
				before := db.ReadTxn()
				name := fmt.Sprintf("reg-%d-%d", g, i)
				id := uint64(i)
				var meta TableMeta
				var err error
				if i%2 == 0 {
					var tbl RWTable[concPair]
					if tbl, err = NewTable(db, name, concPairID, concPairGen); err == nil {
						meta = tbl
						txn := db.WriteTxn(tbl, tblA) // contends with the pair writers
						_, _, err = tbl.Insert(txn, concPair{ID: id, Gen: 1})
						if _, cerr := txn.Commit(); cerr != nil {
							f.errorf("%s: Commit: %v", name, cerr)
						}
						if _, _, found := tbl.Get(before, concPairID.Query(id)); found || tbl.NumObjects(before) != 0 || countSeq(tbl.All(before)) != 0 {
							f.errorf("%s: snapshot from before the registration is not empty", name)
						}
						if _, _, found := tbl.Get(db.ReadTxn(), concPairID.Query(id)); !found {
							f.errorf("%s: committed object not found", name)
						}
					}
				} else {
					var tbl RWTable[*testObject]
					if tbl, err = NewTable(db, name, idIndex, nameIndex); err == nil {
						meta = tbl
						txn := db.WriteTxn(tblB, tbl)
						_, _, err = tbl.Insert(txn, &testObject{ID: id, Name: name})
						if r.IntN(2) == 0 {
							if _, cerr := txn.Commit(); cerr != nil {
								f.errorf("%s: Commit: %v", name, cerr)
							}
						} else {
							// Reading a fresh table through the transaction works.
							if o, _, found := tbl.Get(txn, nameIndex.Query(name)); !found || o.ID != id {
								f.errorf("%s: read own write: %v %v", name, o, found)
							}
							if _, cerr := txn.Commit(); cerr != nil {
								f.errorf("%s: Commit: %v", name, cerr)
							}
						}
						if _, _, found := tbl.Get(before, idIndex.Query(id)); found || tbl.NumObjects(before) != 0 {
							f.errorf("%s: snapshot from before the registration is not empty", name)
						}
					}
				}
				if err != nil {
					f.errorf("%s: %v", name, err)
					return
				}
				results[g] = append(results[g], registered{name, id, meta})
				progress.Add(1)
			}
		}()
	}
	concWait(t, &wg, &progress, 10*time.Second)
	if f.stopped() {
		return
	}

	rtxn := db.ReadTxn()
	checkPairs(rtxn)
	names := map[string]int{}
	for _, m := range db.Tables() {
		names[m.Name()]++
	}
	total := 2
	for i := range dupNames {
		if n := dupWins[i].Load(); n != 1 {
			t.Errorf("reg-dup-%d registered %d times", i, n)
		}
		total++
	}
	for _, res := range results {
		for _, reg := range res {
			total++
			if names[reg.name] != 1 {
				t.Errorf("table %s listed %d times", reg.name, names[reg.name])
			}
			if n := reg.tbl.NumObjects(rtxn); n != 1 {
				t.Errorf("table %s has %d objects, want 1", reg.name, n)
			}
		}
	}
	if len(names) != total || len(db.Tables()) != total {
		t.Errorf("Tables lists %d tables (%d names), want %d", len(db.Tables()), len(names), total)
	}
	t.Logf("%d pair commits, %d+%d tables registered", commits.Load(), len(results[0]), len(results[1]))
}

// TestConcurrentRegistrationDuringOpenWriteTxn: a table registered and
// written while another write transaction is open keeps its contents when
// that transaction commits (commit must not publish a root built from its
// stale snapshot), and the open transaction reads it as empty and cannot
// write to it.
func TestConcurrentRegistrationDuringOpenWriteTxn(t *testing.T) {
	db := New()
	a := newTestTable(t, db, "open-a")
	txn := db.WriteTxn(a)
	if _, _, err := a.Insert(txn, &testObject{ID: 1}); err != nil {
		t.Fatal(err)
	}
	got := make(chan RWTable[concPair])
	go func() {
		n, err := NewTable(db, "open-n", concPairID)
		if err != nil {
			t.Error(err)
			close(got)
			return
		}
		w := db.WriteTxn(n)
		if _, _, err := n.Insert(w, concPair{ID: 7}); err != nil {
			t.Error(err)
		}
		if _, err := w.Commit(); err != nil {
			t.Error(err)
		}
		got <- n
	}()
	n, ok := <-got
	if !ok {
		t.FailNow()
	}
	if c := n.NumObjects(txn); c != 0 {
		t.Errorf("open transaction sees %d objects of a table registered after it began", c)
	}
	if _, _, err := n.Insert(txn, concPair{ID: 8}); !errors.Is(err, ErrTableNotLockedForWriting) {
		t.Errorf("write to a table the transaction did not lock: %v", err)
	}
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatal(err)
	}
	for _, snap := range []ReadTxn{rtxn, db.ReadTxn()} {
		if _, _, found := n.Get(snap, concPairID.Query(7)); !found {
			t.Errorf("object of the table registered meanwhile lost by the commit")
		}
		if _, _, found := a.Get(snap, idIndex.Query(1)); !found {
			t.Errorf("committed object missing")
		}
	}
}

// TestManyTables registers tables one by one past every size a root comes
// in (newRoot), committing to each and checking after a garbage collection
// that every snapshot still holds what every table had when it was taken.
func TestManyTables(t *testing.T) {
	const n = 300
	db := New()
	var tables []RWTable[*testObject]
	var snaps []ReadTxn
	for i := range n {
		tbl := newTestTable(t, db, fmt.Sprintf("t%d", i))
		tables = append(tables, tbl)
		// Write object i to table i, and bump table 0 (so the snapshot
		// tells apart a root that lost a write from one that has it).
		txn := db.WriteTxn(tbl, tables[0])
		if _, _, err := tbl.Insert(txn, &testObject{ID: uint64(i)}); err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			if _, _, err := tables[0].Insert(txn, &testObject{ID: uint64(1000 + i)}); err != nil {
				t.Fatal(err)
			}
		}
		rtxn, err := txn.Commit()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, rtxn)
	}
	runtime.GC()
	for s, rtxn := range snaps {
		for i, tbl := range tables {
			want := 0
			if i <= s {
				want = 1
			}
			if i == 0 {
				want = 1 + s
			}
			if got := tbl.NumObjects(rtxn); got != want {
				t.Fatalf("snapshot %d: table %d has %d objects, want %d", s, i, got, want)
			}
			if i <= s {
				if _, _, ok := tbl.Get(rtxn, idIndex.Query(uint64(i))); !ok {
					t.Fatalf("snapshot %d: table %d lost object %d", s, i, i)
				}
			}
		}
	}
}
