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

// groupWriters runs a goroutine per entry of tables (several may be the
// same table), writer i committing rounds transactions to tables[i]
// (values 1, 2, ...; objects items per transaction, with IDs of its own),
// until a commit fails; acked[i] is writer i's last acknowledged value,
// and failed[i] its error, if any. After a failure, the writer checks that
// memory still holds its last acknowledged commit.
func groupWriters(t *testing.T, db *strata.DB, tables []strata.RWTable[*item], rounds, objects int) (acked []int64, failed []error) {
	acked = make([]int64, len(tables))
	failed = make([]error, len(tables))
	var wg sync.WaitGroup
	for i, tbl := range tables {
		wg.Go(func() {
			for v := int64(1); v <= int64(rounds); v++ {
				txn := db.WriteTxn(tbl)
				for id := range uint64(objects) {
					if _, _, err := tbl.Insert(txn, &item{ID: writerID(i, objects, id), Name: "g", Value: v}); err != nil {
						t.Error(err)
					}
				}
				if _, err := txn.Commit(); err != nil {
					failed[i] = err
					for id, row := range writerRows(db.ReadTxn(), tbl, i, objects) {
						if row.Value != v-1 {
							t.Errorf("writer %d: after a failed commit of %d, object %d holds %d", i, v, id, row.Value)
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

// writerID is the ID of writer i's object id.
func writerID(i, objects int, id uint64) uint64 { return uint64(i*objects) + id }

// writerRows returns the rows of writer i's objects in tbl.
func writerRows(txn strata.ReadTxn, tbl strata.Table[*item], i, objects int) map[uint64]itemRow {
	rows := itemRows(txn, tbl)
	for id := range rows {
		if id < writerID(i, objects, 0) || id >= writerID(i+1, objects, 0) {
			delete(rows, id)
		}
	}
	return rows
}

// checkGroupTables reopens the store in fs at dir and checks that each of
// the n writers' objects hold, whole, a value from acked[i] to
// acked[i]+extra: in table g<i>, or with shared, all in table g0.
func checkGroupTables(t *testing.T, fs vfs.FS, n, objects int, acked []int64, extra int64, shared bool) {
	t.Helper()
	s := openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	db := strata.New()
	var tbl strata.RWTable[*item]
	for i := range n {
		name := fmt.Sprint("g", i)
		switch {
		case !shared:
			tbl = itemTable(t, s, db, name, nil)
		case i == 0:
			tbl = itemTable(t, s, db, "g0", nil)
		default:
			name = fmt.Sprint("g0, writer ", i)
		}
		rows := writerRows(db.ReadTxn(), tbl, i, objects)
		v := rows[writerID(i, objects, 0)].Value
		if len(rows) != objects && !(len(rows) == 0 && acked[i] == 0) {
			t.Fatalf("table %s: %d objects, want %d", name, len(rows), objects)
		}
		for id, row := range rows {
			if row.Value != v {
				t.Fatalf("table %s torn: object %d holds %d, the first %d", name, id, row.Value, v)
			}
		}
		if v < acked[i] || v > acked[i]+extra {
			t.Fatalf("table %s holds commit %d; %d was acknowledged", name, v, acked[i])
		}
	}
}

// TestGroupCommit: concurrent Sync commits to different tables, or to
// one table (each commit then built on the one before while its record
// waits for its sync), merged into shared batches (or, with groups too
// large to merge, committed one by one), all come back after a reopen,
// each whole.
func TestGroupCommit(t *testing.T) {
	for _, c := range []struct {
		name     string
		maxBytes int
		shared   bool
	}{
		{"merged", maxGroupBytes, false},
		{"alone", 0, false},
		{"merged/one-table", maxGroupBytes, true},
		{"alone/one-table", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(old int) { maxGroupBytes = old }(maxGroupBytes)
			maxGroupBytes = c.maxBytes
			const writers, rounds, objects = 8, 100, 3
			fs := vfs.NewCrashableMem()
			s := openStore(t, "/db", Options{FS: fs})
			db := strata.New()
			tables := make([]strata.RWTable[*item], writers)
			for i := range tables {
				if c.shared && i > 0 {
					tables[i] = tables[0]
					continue
				}
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
			checkGroupTables(t, fs, writers, objects, acked, 0, c.shared)
		})
	}
}

// TestGroupCommitWALError: when the log's sync fails under a group, every
// member's commit fails, memory keeps each writer's last acknowledged
// commit, and the store holds, after a power loss, every acknowledged
// commit and none of the failed ones. With one table, the writers' commits
// form chains (each builds on the one before, whose record is not yet
// durable): every commit built on a failed one fails too.
func TestGroupCommitWALError(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("one-table=%v", shared), func(t *testing.T) { testGroupCommitWALError(t, shared) })
	}
}

func testGroupCommitWALError(t *testing.T, shared bool) {
	const writers, objects = 8, 3
	mem := vfs.NewCrashableMem()
	faults := &walFaults{sync: true}
	s := openStore(t, "/db", Options{FS: errorfs.Wrap(mem, faults)})
	db := strata.New()
	tables := make([]strata.RWTable[*item], writers)
	for i := range tables {
		if shared && i > 0 {
			tables[i] = tables[0]
			continue
		}
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
	chained := 0
	for i, err := range failed {
		if err == nil {
			t.Fatalf("writer %d never failed", i)
		}
		if !errors.Is(err, ErrStoreFailed) && !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("writer %d failed with %v", i, err)
		}
		if shared && errors.Is(err, strata.ErrEarlierCommitFailed) {
			chained++
		}
	}
	if faults.hits.Load() == 0 {
		t.Fatal("no sync failed")
	}
	if err := s.Close(); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("Close of a failed store: %v", err)
	}
	t.Logf("acknowledged %v; %d failed as built on a failed commit", acked, chained)
	checkGroupTables(t, mem.CrashClone(vfs.CrashCloneCfg{}), writers, objects, acked, 0, shared)
}
