package persist

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/strata-db/strata"
)

// walFaults fails the writes or the syncs of Pebble's log files while
// armed.
type walFaults struct {
	armed atomic.Bool
	sync  bool // fail syncs, else writes
	hits  atomic.Int32
}

func (f *walFaults) String() string { return "walFaults" }

func (f *walFaults) MaybeError(op errorfs.Op) error {
	if !f.armed.Load() || !strings.HasSuffix(op.Path, ".log") {
		return nil
	}
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		if !f.sync {
			return nil
		}
	case errorfs.OpFileWrite, errorfs.OpFileWriteAt:
		if f.sync {
			return nil
		}
	default:
		return nil
	}
	f.hits.Add(1)
	return errorfs.ErrInjected
}

// syncBuffer is a bytes.Buffer for a logger written by several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWALErrors: a commit whose log write or sync fails returns an error
// and changes nothing in memory (objects, revisions, watch channels); the
// store then refuses commits (Pebble holds such errors fatal: its memtable
// may already hold the batch) and fails Close; reopened, it holds the
// committed transactions, plus at most the failed one, whole.
func TestWALErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		sync bool
		mode SyncMode
	}{
		{"sync-fails/Sync", true, Sync{}},
		{"write-fails/Sync", false, Sync{}},
		{"sync-fails/Buffered", true, Buffered{Interval: time.Millisecond}},
		{"write-fails/Buffered", false, Buffered{Interval: time.Millisecond}},
	} {
		t.Run(c.name, func(t *testing.T) { testWALError(t, c.sync, c.mode) })
	}
}

func testWALError(t *testing.T, failSync bool, mode SyncMode) {
	mem := vfs.NewCrashableMem()
	faults := &walFaults{sync: failSync}
	var logBuf syncBuffer
	s, err := Open("/db", Options{
		FS:     errorfs.Wrap(mem, faults),
		Sync:   mode,
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := openBank(s)
	if err != nil {
		t.Fatal(err)
	}
	const good = 20
	for seq := uint64(1); seq <= good; seq++ {
		if _, err := b.run(planOf(seq)); err != nil {
			t.Fatal(err)
		}
	}
	if _, buffered := mode.(Buffered); buffered {
		// Sync them, as the sync loop does, before the fault: the bounds
		// below count them as durable, and the loop may not have run yet
		// on a slow machine.
		if err := s.syncLog(); err != nil {
			t.Fatal(err)
		}
	}

	faults.armed.Store(true)
	// In Sync mode the first commit fails. In Buffered mode commits are
	// acknowledged before the log is written and synced: they go on until
	// the sync loop meets the error and fails the store.
	seq := uint64(good)
	var failure error
	var before strata.ReadTxn
	deadline := time.Now().Add(time.Minute) // only a hang reaches it
	for failure == nil && time.Now().Before(deadline) {
		before = b.db.ReadTxn()
		_, _, watchA, _ := b.accounts.GetWatch(before, accountByID.Query(0))
		_, watchT := b.transfers.AllWatch(before)
		if _, err := b.run(planOf(seq + 1)); err != nil {
			failure = err
			// Memory is unchanged: contents, revisions, watch channels.
			now := b.db.ReadTxn()
			if err := b.checkModel(now, bankModelAt(seq)); err != nil {
				t.Fatalf("memory after the failed commit: %v", err)
			}
			if b.accounts.Revision(now) != b.accounts.Revision(before) || b.transfers.Revision(now) != b.transfers.Revision(before) {
				t.Fatal("the failed commit changed revisions")
			}
			for _, ch := range []<-chan struct{}{watchA, watchT} {
				select {
				case <-ch:
					t.Fatal("the failed commit closed a watch channel")
				default:
				}
			}
			break
		}
		seq++
		time.Sleep(time.Millisecond)
	}
	if failure == nil {
		t.Fatal("no commit failed with the log failing")
	}
	if !errors.Is(failure, ErrStoreFailed) {
		t.Fatalf("failed commit: %v", failure)
	}
	if strings.Contains(failure.Error(), "\n") {
		t.Fatalf("the error carries several lines (a stack trace?): %q", failure)
	}
	if !strings.Contains(logBuf.String(), "level=ERROR") || !strings.Contains(logBuf.String(), "injected error") {
		t.Fatalf("the failure was not logged:\n%s", logBuf.String())
	}
	for _, line := range strings.Split(logBuf.String(), "\n") {
		if strings.Contains(line, "level=ERROR") && strings.Contains(line, "stack trace") {
			t.Fatalf("an Error line carries a stack trace: %s", line)
		}
	}
	t.Logf("failed after %d acknowledged transactions: %v", seq, failure)

	// The store refuses every later commit, even with the fault gone.
	faults.armed.Store(false)
	if _, err := b.run(planOf(seq + 1)); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("commit after the failure: %v", err)
	}
	if err := s.Close(); !errors.Is(err, ErrStoreFailed) {
		t.Fatalf("Close of a failed store: %v", err)
	}

	// A power loss now keeps every synced commit: in Sync mode every
	// acknowledged one and never the failed one; in Buffered mode at least
	// those synced before the fault.
	_, syncMode := mode.(Sync)
	lost := recoverBank(t, mem.CrashClone(vfs.CrashCloneCfg{}))
	if syncMode && lost != seq || lost < good || lost > seq+1 {
		t.Fatalf("after a power loss the store holds transaction %d, acknowledged %d", lost, seq)
	}
	// Reopened as it is (the process went on), the store holds the
	// acknowledged commits whose records reached the log file, and maybe
	// the failed one, whole: its record may have reached the file before
	// the failing sync. In Buffered mode, commits acknowledged after the
	// fault whose writes failed are lost: that mode's promise.
	got := recoverBank(t, mem)
	if syncMode && got != seq && got != seq+1 || got < good || got > seq+1 {
		t.Fatalf("reopened, the store holds transaction %d, acknowledged %d", got, seq)
	}
	t.Logf("after a power loss: transaction %d; reopened: %d", lost, got)
}
