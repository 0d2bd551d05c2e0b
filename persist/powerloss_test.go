package persist

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/strata-db/strata"
)

// The power-loss tests run the store on Pebble's crashable in-memory file
// system, and open crash clones of it: the file system as a power loss at
// that moment could leave it, with all synced data and a random part of
// the unsynced data.

// crashClone returns a crash clone of fs with a random share of the
// unsynced data.
func crashClone(fs *vfs.MemFS, rng *rand.Rand) *vfs.MemFS {
	return fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(101), RNG: rng})
}

// recoverBank opens the bank in a crash clone and checks it against the
// model; it returns the sequence number it holds.
func recoverBank(t testing.TB, fs vfs.FS) uint64 {
	t.Helper()
	seq, err := checkBank(t, fs)
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// checkBank is recoverBank returning the check's error (a violation).
func checkBank(t testing.TB, fs vfs.FS) (uint64, error) {
	t.Helper()
	s := openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	b, err := openBank(s)
	if err != nil {
		t.Fatal(err)
	}
	seq, err := b.check(b.db.ReadTxn())
	if err != nil {
		return seq, fmt.Errorf("crash clone holding transaction %d: %w", seq, err)
	}
	return seq, nil
}

// powerLoss counts what the power-loss tests checked, and logs it.
type powerLoss struct {
	t          *testing.T
	clones     int // crash clones opened and checked
	checked    int // acknowledged commits a clone had to hold, summed over the clones
	lost       int // acknowledged commits a clone did not hold (Buffered), summed
	violations int
}

func (p *powerLoss) violation(format string, args ...any) {
	p.violations++
	p.t.Errorf(format, args...)
}

func (p *powerLoss) log(acked int) {
	p.t.Logf("%d crash clones after %d acknowledged commits: %d acknowledged commits checked across the clones, %d of them lost; %d violations",
		p.clones, acked, p.checked, p.lost, p.violations)
}

func powerLossRounds() int {
	switch {
	case *longRun:
		return 2000
	case testing.Short():
		return 100
	}
	return 300
}

// TestPowerLossSync: every commit acknowledged in Sync mode survives a
// power loss.
func TestPowerLossSync(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	b, err := openBank(s)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	p := powerLoss{t: t}
	for seq := uint64(1); seq <= uint64(powerLossRounds()); seq++ {
		if _, err := b.run(planOf(seq)); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(10) == 0 {
			p.clones++
			p.checked += int(seq)
			got, err := checkBank(t, crashClone(fs, rng))
			if err != nil {
				p.violation("%v", err)
			} else if got != seq {
				p.violation("after acknowledged transaction %d a crash clone holds %d", seq, got)
			}
		}
	}
	p.log(powerLossRounds())
}

// TestPowerLossBuffered: in Buffered mode a power loss may lose the last
// commits, but what survives is a prefix of the commits, each whole.
func TestPowerLossBuffered(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openStore(t, "/db", Options{FS: fs, Sync: Buffered{Interval: 2 * time.Millisecond}})
	defer closeStore(t, s)
	b, err := openBank(s)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	p := powerLoss{t: t}
	for seq := uint64(1); seq <= uint64(powerLossRounds()); seq++ {
		if _, err := b.run(planOf(seq)); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(4) == 0 {
			time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
		}
		if rng.IntN(10) == 0 {
			p.clones++
			p.checked += int(seq)
			got, err := checkBank(t, crashClone(fs, rng)) // checks got's state exactly
			switch {
			case err != nil:
				p.violation("%v", err)
			case got > seq:
				p.violation("crash clone holds transaction %d, beyond the last one, %d", got, seq)
			default:
				p.lost += int(seq - got)
			}
		}
	}
	p.log(powerLossRounds())
}

// TestPowerLossConcurrent: writers commit at once (sharing syncs), to
// different tables, or to one table (each commit built on the one before
// while that one's record waits for its sync), while crash clones are
// taken: each clone holds, for every writer, every commit acknowledged
// before the clone, at most one more in flight, each whole.
func TestPowerLossConcurrent(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("one-table=%v", shared), func(t *testing.T) { testPowerLossConcurrent(t, shared) })
	}
}

func testPowerLossConcurrent(t *testing.T, shared bool) {
	const writers, objects = 4, 5
	fs := vfs.NewCrashableMem()
	s := openStore(t, "/db", Options{FS: fs})
	defer closeStore(t, s)
	db := strata.New()
	tables := make([]strata.RWTable[*item], writers)
	for i := range tables {
		if shared && i > 0 {
			tables[i] = tables[0]
			continue
		}
		tables[i] = itemTable(t, s, db, fmt.Sprint("w", i), nil)
	}
	var acked [writers]atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, tbl := range tables {
		wg.Go(func() {
			for v := int64(1); ; v++ {
				select {
				case <-stop:
					return
				default:
				}
				txn := db.WriteTxn(tbl)
				for id := range uint64(objects) {
					if _, _, err := tbl.Insert(txn, &item{ID: writerID(i, objects, id), Name: fmt.Sprint("w", i), Value: v}); err != nil {
						t.Error(err)
					}
				}
				if _, err := txn.Commit(); err != nil {
					t.Error(err)
					return
				}
				acked[i].Store(v)
			}
		})
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	rounds := powerLossRounds() / 10
	p := powerLoss{t: t, clones: rounds}
	for range rounds {
		time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
		var before, after [writers]int64
		for i := range acked {
			before[i] = acked[i].Load()
		}
		clone := crashClone(fs, rng)
		for i := range acked {
			after[i] = acked[i].Load()
		}
		cs := openStore(t, "/db", Options{FS: clone})
		cdb := strata.New()
		var tbl strata.RWTable[*item]
		for i := range tables {
			if !shared || i == 0 {
				tbl = itemTable(t, cs, cdb, fmt.Sprint("w", i), nil)
			}
			rows := writerRows(cdb.ReadTxn(), tbl, i, objects)
			v := rows[writerID(i, objects, 0)].Value
			p.checked += int(before[i])
			for id := range uint64(objects) {
				if rows[writerID(i, objects, id)].Value != v {
					p.violation("writer %d torn: %v", i, rows)
					break
				}
			}
			if len(rows) != 0 && len(rows) != objects || v < before[i] || v > after[i]+1 {
				p.violation("writer %d's objects hold commit %d (%d objects); acknowledged %d before the clone, %d after", i, v, len(rows), before[i], after[i])
			}
		}
		closeStore(t, cs)
	}
	close(stop)
	wg.Wait()
	total := int64(0)
	for i := range acked {
		total += acked[i].Load()
	}
	p.log(int(total))
}
