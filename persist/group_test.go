package persist

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/strata-db/strata"
)

// groupWriters runs writers goroutines, each committing rounds
// transactions to its own table of s (values 1, 2, ...; objects items per
// transaction), until a commit fails; acked[i] is writer i's last
// acknowledged value, and failed[i] its error, if any. After a failure,
// the writer checks that memory still holds its last acknowledged commit.
func groupWriters(t *testing.T, db *strata.DB, tables []strata.RWTable[*item], rounds, objects int) (acked []int64, failed []error) {
	acked = make([]int64, len(tables))
	failed = make([]error, len(tables))
	var wg sync.WaitGroup
	for i, tbl := range tables {
		wg.Go(func() {
			for v := int64(1); v <= int64(rounds); v++ {
				txn := db.WriteTxn(tbl)
				for id := range uint64(objects) {
					tbl.Insert(txn, &item{ID: id, Name: "g", Value: v})
				}
				if _, err := txn.Commit(); err != nil {
					failed[i] = err
					for id, row := range itemRows(db.ReadTxn(), tbl) {
						if row.Value != v-1 {
							t.Errorf("table %d: after a failed commit of %d, object %d holds %d", i, v, id, row.Value)
						}
					}
					return
				}
				acked[i] = v
			}
		})
	}
	wg.Wait()
	return acked, failed
}

// checkGroupTables reopens the store in fs at dir and checks that each
// table holds, whole, a value from acked[i] to acked[i]+extra.
func checkGroupTables(t *testing.T, fs vfs.FS, n, objects int, acked []int64, extra int64) {
	t.Helper()
	s := openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	db := strata.New()
	for i := range n {
		tbl := itemTable(t, s, db, fmt.Sprint("g", i), nil)
		rows := itemRows(db.ReadTxn(), tbl)
		v := rows[0].Value
		if len(rows) != objects && !(len(rows) == 0 && acked[i] == 0) {
			t.Fatalf("table g%d: %d objects, want %d", i, len(rows), objects)
		}
		for id, row := range rows {
			if row.Value != v {
				t.Fatalf("table g%d torn: object %d holds %d, object 0 %d", i, id, row.Value, v)
			}
		}
		if v < acked[i] || v > acked[i]+extra {
			t.Fatalf("table g%d holds commit %d; %d was acknowledged", i, v, acked[i])
		}
	}
}

// TestGroupCommit: concurrent Sync commits to different tables, merged
// into shared batches (or, with groups too large to merge, committed
// alone), all come back after a reopen, each whole.
func TestGroupCommit(t *testing.T) {
	for _, c := range []struct {
		name     string
		maxBytes int
	}{{"merged", maxGroupBytes}, {"alone", 0}} {
		t.Run(c.name, func(t *testing.T) {
			defer func(old int) { maxGroupBytes = old }(maxGroupBytes)
			maxGroupBytes = c.maxBytes
			const writers, rounds, objects = 8, 100, 3
			fs := vfs.NewCrashableMem()
			s := openStore(t, "/db", Options{FS: fs})
			db := strata.New()
			tables := make([]strata.RWTable[*item], writers)
			for i := range tables {
				tables[i] = itemTable(t, s, db, fmt.Sprint("g", i), nil)
			}
			// The first leader waits for a commit to queue behind it, so
			// that a group forms however the writers are scheduled.
			var first sync.Once
			s.group.onApply = func() {
				first.Do(func() {
					deadline := time.Now().Add(10 * time.Second)
					for s.group.queued.Load() == 0 && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond)
					}
				})
			}
			acked, failed := groupWriters(t, db, tables, rounds, objects)
			for i, err := range failed {
				if err != nil {
					t.Fatalf("writer %d: %v", i, err)
				}
			}
			grouped := s.group.grouped.Load()
			if c.maxBytes == 0 && grouped != 0 {
				t.Fatalf("%d commits went in merged batches larger than the limit", grouped)
			}
			if c.maxBytes > 0 && grouped == 0 {
				t.Fatal("no commits were merged: the test did not exercise groups")
			}
			t.Logf("%d of %d commits in merged batches", grouped, writers*rounds)
			closeStore(t, s)
			checkGroupTables(t, fs, writers, objects, acked, 0)
		})
	}
}

// TestGroupCommitWALError: when the log's sync fails under a group, every
// member's commit fails, memory keeps each table's last acknowledged
// commit, and the store holds, after a power loss, every acknowledged
// commit and none of the failed ones.
func TestGroupCommitWALError(t *testing.T) {
	const writers, objects = 8, 3
	mem := vfs.NewCrashableMem()
	faults := &walFaults{sync: true}
	s := openStore(t, "/db", Options{FS: errorfs.Wrap(mem, faults)})
	db := strata.New()
	tables := make([]strata.RWTable[*item], writers)
	for i := range tables {
		tables[i] = itemTable(t, s, db, fmt.Sprint("g", i), nil)
	}
	// Arm the fault once the writers are under way.
	var commits atomic.Int64
	s.group.onApply = func() {
		if commits.Add(1) == 50 {
			faults.armed.Store(true)
		}
	}
	acked, failed := groupWriters(t, db, tables, 1_000_000, objects)
	for i, err := range failed {
		if err == nil {
			t.Fatalf("writer %d never failed", i)
		}
		if !errors.Is(err, ErrStoreFailed) && !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("writer %d failed with %v", i, err)
		}
	}
	if faults.hits.Load() == 0 {
		t.Fatal("no sync failed")
	}
	if err := s.Close(); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("Close of a failed store: %v", err)
	}
	t.Logf("acknowledged %v", acked)
	checkGroupTables(t, mem.CrashClone(vfs.CrashCloneCfg{}), writers, objects, acked, 0)
}
