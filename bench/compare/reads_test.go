package main

import (
	"iter"
	"runtime"
	"testing"

	"github.com/strata-db/strata"
)

// TestReadScanAllocs accounts for the allocations per op of the read
// workloads. A Strata scan allocates one thing, the iter.Seq2 it returns;
// the others of a workload's op are Go's for a range-over-func loop over a
// function it cannot see into (an iterator returned through an interface):
// the loop body's closure, its range state and the result it updates, which
// move to the heap. The bare tree's loop calls Next in a plain for loop, so
// all of its allocations are the tree's.
func TestReadScanAllocs(t *testing.T) {
	d, err := newStrata(Schema{Tags: true})
	if err != nil {
		t.Fatal(err)
	}
	s := d.(*strataDB)
	objs := readObjects(batchN)
	w := s.WriteTxn()
	for _, o := range objs {
		if err := w.Insert(o); err != nil {
			t.Fatal(err)
		}
	}
	w.Commit()
	txn := s.db.ReadTxn()

	n := 0
	yield := func(*Object, strata.Revision) bool { n++; return true }
	scans := []struct {
		name string
		seq  func() iter.Seq2[*Object, strata.Revision]
		want int // objects
		// bytes: the size of the iterator, which sets how often the
		// collector runs while readers scan (table_read.go's scanObjects).
		bytes uint64
	}{
		{"All", func() iter.Seq2[*Object, strata.Revision] { return s.tbl.All(txn) }, batchN, 32},
		{"LowerBound", func() iter.Seq2[*Object, strata.Revision] { return s.tbl.LowerBound(txn, strataID.Query(500)) }, batchN - 500, 48},
		{"List", func() iter.Seq2[*Object, strata.Revision] { return s.tbl.List(txn, strataTags.Query(readTags[3][0])) }, batchN / readTagCount, 48},
	}
	for _, sc := range scans {
		n = 0
		if a := testing.AllocsPerRun(100, func() { sc.seq()(yield) }); a != 1 || n != 101*sc.want {
			t.Errorf("%s: a scan allocated %v times (want 1) and yielded %d objects (want %d)", sc.name, a, n, 101*sc.want)
		}
		const runs = 1000
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			sc.seq()(yield)
		}
		runtime.ReadMemStats(&after)
		if b := (after.TotalAlloc - before.TotalAlloc) / runs; b > sc.bytes {
			t.Errorf("%s: a scan allocated %d bytes, want at most %d", sc.name, b, sc.bytes)
		}
	}

	// The same scans in range loops, as the workloads write them.
	r := &strataR{a: s, txn: txn}
	if a := testing.AllocsPerRun(100, func() { r.All() }); a != 4 {
		t.Errorf("All in a range loop allocated %v times, want 1 + 3", a)
	}
	if a := testing.AllocsPerRun(100, func() { r.ListByTag(readTags[3][0]) }); a != 4 {
		t.Errorf("List in a range loop allocated %v times, want 1 + 3", a)
	}
}
