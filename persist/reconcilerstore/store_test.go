// Package reconcilerstore tests package reconciler on a durable table
// (package persist) whose store refuses the reconciler's status writes:
// the outcomes of the operations are kept (no operation runs again), the
// write is retried while health is Degraded, and the statuses are written
// once the store takes writes again, or, for a store that failed for good,
// by the reconciler of the reopened store.
package reconcilerstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// object is a desired object: a name and its status.
type object struct {
	Name   string
	Status reconciler.Status
}

func (o *object) Clone() *object                        { c := *o; return &c }
func (o *object) GetStatus() reconciler.Status          { return o.Status }
func (o *object) SetStatus(s reconciler.Status) *object { o.Status = s; return o }

func (o *object) AppendBinary(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(o.Name)))
	b = append(b, o.Name...)
	return o.Status.AppendBinary(b)
}

func (o *object) UnmarshalBinary(b []byte) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return errors.New("object: malformed")
	}
	o.Name = string(b[k : k+int(n)])
	return o.Status.UnmarshalBinary(b[k+int(n):])
}

var byName = strata.Index[*object, string]{
	Name:       "name",
	FromObject: func(o *object) index.KeySet { return index.NewKeySet(index.String(o.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

func objectKey(o *object) string { return o.Name }

// refusingCodec is the binary codec, refusing to encode while refuse is
// set: the store then refuses every commit that writes the table, and
// takes them again once it is cleared.
type refusingCodec struct {
	persist.Codec[*object]
	refuse atomic.Bool
}

var errRefused = errors.New("the codec refuses to encode")

func (c *refusingCodec) Append(dst []byte, o *object) ([]byte, error) {
	if c.refuse.Load() {
		return nil, errRefused
	}
	return c.Codec.Append(dst, o)
}

// logFaults fails the writes of Pebble's log while armed: the store fails,
// and refuses writes until it is reopened.
type logFaults struct{ armed atomic.Bool }

func (f *logFaults) String() string { return "logFaults" }

func (f *logFaults) MaybeError(op errorfs.Op) error {
	if f.armed.Load() && strings.HasSuffix(op.Path, ".log") &&
		(op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt) {
		return errorfs.ErrInjected
	}
	return nil
}

// health records the reconciler's last health report.
type health struct {
	mu    sync.Mutex
	level string
	err   error
}

func (h *health) OK(string)                  { h.set("OK", nil) }
func (h *health) Degraded(_ string, e error) { h.set("Degraded", e) }
func (h *health) Stopped(string)             { h.set("Stopped", nil) }

func (h *health) set(level string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.level, h.err = level, err
}

func (h *health) get() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.level, h.err
}

// commits counts the reconciler's status commits, by result.
type commits struct {
	reconciler.NopMetrics
	failed, ok atomic.Int32
}

func (c *commits) Reconciler(string) reconciler.ReconcilerMetrics { return commitCounter{c} }

type commitCounter struct{ c *commits }

func (commitCounter) Operation(reconciler.Op, reconciler.Outcome, time.Duration) {}
func (commitCounter) QueueWait(reconciler.Lane, time.Duration)                   {}
func (commitCounter) Reconciled(time.Duration)                                   {}
func (commitCounter) Progress(reconciler.Stats)                                  {}
func (commitCounter) Prune(reconciler.Outcome, time.Duration)                    {}
func (commitCounter) Refresh(int)                                                {}
func (m commitCounter) StatusCommit(_, _ int, _ time.Duration, err error) {
	if err != nil {
		m.c.failed.Add(1)
	} else {
		m.c.ok.Add(1)
	}
}

// fixture is a durable table, an outside world and a running reconciler.
type fixture struct {
	t      *testing.T
	db     *strata.DB
	tbl    strata.RWTable[*object]
	store  *persist.Store
	world  *reconcilertest.World[*object]
	r      *reconciler.Reconciler[*object]
	health *health
	count  *commits
	stop   func()
}

// start opens the store on fs in /db and runs a reconciler of its table.
func start(t *testing.T, fs vfs.FS, codec persist.Codec[*object]) *fixture {
	t.Helper()
	store, err := persist.Open("/db", persist.Options{FS: fs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, db: strata.New(), store: store, world: reconcilertest.NewWorld(objectKey),
		health: &health{}, count: &commits{}}
	f.tbl = strata.MustNewTable(f.db, "objects", byName)
	if err := persist.Register(store, f.db, f.tbl, codec); err != nil {
		t.Fatal(err)
	}
	f.r, err = reconciler.New(f.db, reconciler.Config[*object]{
		Table: f.tbl, CloneObject: (*object).Clone,
		GetObjectStatus: (*object).GetStatus, SetObjectStatus: (*object).SetStatus,
		Operations: f.world,
	},
		// Rounds of one object, and no prune (which would wait for the
		// blocked operation), so that a blocked object holds no other up.
		reconciler.WithWorkers(2), reconciler.WithRoundSize(1), reconciler.WithRetry(10*time.Millisecond, 50*time.Millisecond),
		reconciler.WithDrainTimeout(100*time.Millisecond), reconciler.WithoutRefresh(), reconciler.WithoutPruning(),
		reconciler.WithMetrics(f.count), reconciler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.r.Run(ctx, f.health) }()
	f.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	return f
}

func (f *fixture) insert(names ...string) error {
	wtxn := f.db.WriteTxn(f.tbl)
	for _, name := range names {
		if _, _, err := f.tbl.Insert(wtxn, &object{Name: name, Status: reconciler.StatusPending()}); err != nil {
			wtxn.Abort()
			return err
		}
	}
	_, err := wtxn.Commit()
	return err
}

func (f *fixture) status(name string) reconciler.Status {
	o, _, ok := f.tbl.Get(f.db.ReadTxn(), byName.Query(name))
	if !ok {
		f.t.Fatalf("%s is not in the table", name)
	}
	return o.Status
}

// eventually waits for cond to hold, up to a minute: a bound that only a
// hang reaches, however slow the machine.
func eventually(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fixture) done(names ...string) func() error {
	return func() error {
		for _, name := range names {
			if st := f.status(name); st.Kind != reconciler.StatusKindDone {
				return fmt.Errorf("%s: %s", name, st)
			}
		}
		return nil
	}
}

// refusing waits until the reconciler's status write for name has failed
// a few times, and checks what it shows meanwhile.
func (f *fixture) refusing(name string, cause error) {
	t := f.t
	t.Helper()
	eventually(t, "the status write was not retried", func() error {
		if n := f.count.failed.Load(); n < 3 {
			return fmt.Errorf("%d failed status commits", n)
		}
		return nil
	})
	if l, err := f.health.get(); l != "Degraded" || !errors.Is(err, cause) {
		t.Errorf("health %s (%v), want Degraded with %v", l, err, cause)
	}
	if !f.r.Stats().CommitFailing {
		t.Error("Stats.CommitFailing is false")
	}
	// The outcome is kept: the object waits for its status write, and
	// its operation does not run again.
	if in, _ := f.r.Inspect(index.String(name)); in.Phase != reconciler.PhaseInFlight {
		t.Errorf("Inspect(%s): %+v, want in flight (outcome kept)", name, in)
	}
	if st := f.status(name); st.Kind != reconciler.StatusKindPending {
		t.Errorf("%s: %s in the table while the store refuses", name, st)
	}
	if up, _, _ := f.world.Counts(); up != 3 {
		t.Errorf("%d updates, want 3: an outcome was not kept", up)
	}
}

// TestRefusedThenTaken: the store refuses the status write of an object
// (its codec refuses to encode), and takes it again later: the reconciler
// keeps the outcome, retries the write with Degraded health, and once the
// store takes it the status is Done and health OK, the operation having
// run once.
func TestRefusedThenTaken(t *testing.T) {
	codec := &refusingCodec{Codec: persist.Binary[object]()}
	f := start(t, vfs.NewMem(), codec)
	defer f.store.Close()
	defer f.stop()
	release := f.world.Block("a")
	if err := f.insert("a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b and c not Done", f.done("b", "c"))
	codec.refuse.Store(true)
	release()
	f.refusing("a", errRefused)
	if err := f.insert("d"); !errors.Is(err, errRefused) {
		t.Fatalf("a user's commit while the store refuses: %v", err)
	}

	codec.refuse.Store(false)
	eventually(t, "a not Done once the store takes writes", f.done("a"))
	eventually(t, "health not OK", func() error {
		if l, err := f.health.get(); l != "OK" {
			return fmt.Errorf("health %s (%v)", l, err)
		}
		return nil
	})
	if f.r.Stats().CommitFailing {
		t.Error("Stats.CommitFailing still set")
	}
	if up, _, _ := f.world.Counts(); up != 3 {
		t.Errorf("%d updates, want 3", up)
	}
	if f.count.ok.Load() == 0 {
		t.Error("no successful status commit counted")
	}
}

// TestStoreFailed: the store's log cannot be written, and the store fails:
// it refuses writes until it is reopened, even once the disk works again.
// The reconciler keeps the outcome and retries, Degraded, and stops within
// its drain timeout; the object's status stays Pending in the store, so
// the reconciler of the reopened store reconciles it, and it is Done.
func TestStoreFailed(t *testing.T) {
	mem := vfs.NewMem()
	faults := &logFaults{}
	codec := persist.Binary[object]()
	f := start(t, errorfs.Wrap(mem, faults), codec)
	release := f.world.Block("a")
	if err := f.insert("a", "b", "c"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b and c not Done", f.done("b", "c"))
	faults.armed.Store(true)
	release()
	f.refusing("a", persist.ErrStoreFailed)
	faults.armed.Store(false)
	failed := f.count.failed.Load()
	eventually(t, "the failed store's writes were not retried", func() error {
		if n := f.count.failed.Load(); n < failed+3 {
			return fmt.Errorf("%d more failed status commits", n-failed)
		}
		return nil
	})
	if st := f.status("a"); st.Kind != reconciler.StatusKindPending {
		t.Errorf("a: %s in a failed store", st)
	}
	// Run stops after its drain timeout of 100ms, although the writes
	// still fail. The bound only tells that from waiting for the writes
	// (a hang) or for the default drain timeout (30s): far above 100ms,
	// for a slow machine.
	began := time.Now()
	f.stop()
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("Run took %s to stop, drain timeout 100ms", took)
	}
	if err := f.store.Close(); !errors.Is(err, persist.ErrStoreFailed) {
		t.Errorf("Close of the failed store: %v", err)
	}

	// Reopened: a is Pending as the store holds it, and is reconciled.
	f = start(t, mem, codec)
	defer f.store.Close()
	defer f.stop()
	eventually(t, "a not Done after the reopen", f.done("a", "b", "c"))
	if up, _, _ := f.world.Counts(); up != 1 {
		t.Errorf("%d updates after the reopen, want 1 (a)", up)
	}
	eventually(t, "health not OK after the reopen", func() error {
		if l, err := f.health.get(); l != "OK" {
			return fmt.Errorf("health %s (%v)", l, err)
		}
		return nil
	})
}
