// Package reconcilerrestart tests package reconciler on a durable table
// (package persist): a process reconciling a table into files in a
// directory is killed with SIGKILL at random points, again and again, and a
// new reconciler must then converge, resuming the backoff of the objects it
// finds in Error; and the Done objects a killed process left are
// refreshed after the restart, at the refresh rate, repairing the files
// that changed while no process ran.
package reconcilerrestart

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/reconciler"
	"go.uber.org/goleak"
)

var cycles = flag.Int("restart.cycles", 0, "SIGKILL cycles of TestReconcilerRestart (default 20, 6 with -short)")

// The test re-executes its binary as the child that gets killed.
const (
	childEnv    = "STRATA_RECONCILER_RESTART_CHILD"
	childDirEnv = "STRATA_RECONCILER_RESTART_DIR"
	// childModeEnv "converge" makes the child write files, converge and
	// wait to be killed (convergeChild); otherwise it writes random
	// changes until killed (child).
	childModeEnv = "STRATA_RECONCILER_RESTART_MODE"
)

func TestMain(m *testing.M) {
	if seed := os.Getenv(childEnv); seed != "" {
		s, _ := strconv.ParseUint(seed, 10, 64)
		if os.Getenv(childModeEnv) == "converge" {
			convergeChild(os.Getenv(childDirEnv), int(s))
		} else {
			child(os.Getenv(childDirEnv), s)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// file is a desired file: its name and content.
type file struct {
	Name    string
	Content string
	Status  reconciler.Status
}

func (f *file) Clone() *file                        { c := *f; return &c }
func (f *file) GetStatus() reconciler.Status        { return f.Status }
func (f *file) SetStatus(s reconciler.Status) *file { f.Status = s; return f }
func (f *file) AppendBinary(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(f.Name)))
	b = append(b, f.Name...)
	b = binary.AppendUvarint(b, uint64(len(f.Content)))
	b = append(b, f.Content...)
	return f.Status.AppendBinary(b)
}

func (f *file) UnmarshalBinary(b []byte) error {
	str := func() (string, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", errors.New("file: malformed")
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, nil
	}
	var err error
	if f.Name, err = str(); err != nil {
		return err
	}
	if f.Content, err = str(); err != nil {
		return err
	}
	return f.Status.UnmarshalBinary(b)
}

var fileByName = strata.Index[*file, string]{
	Name:       "name",
	FromObject: func(f *file) index.KeySet { return index.NewKeySet(index.String(f.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// dirWorld is the outside world: files in a directory. Files whose name
// starts with "bad-" cannot be written while failing is set.
type dirWorld struct {
	dir     string
	failing bool

	mu       sync.Mutex
	attempts map[string][]time.Time // Update calls, by name
	prunes   int
}

var errRefused = errors.New("the world refuses bad- files")

func (w *dirWorld) Update(_ context.Context, _ strata.ReadTxn, _ strata.Revision, f *file) error {
	w.mu.Lock()
	w.attempts[f.Name] = append(w.attempts[f.Name], time.Now())
	failing := w.failing
	w.mu.Unlock()
	if failing && strings.HasPrefix(f.Name, "bad-") {
		return errRefused
	}
	tmp := filepath.Join(w.dir, ".tmp-"+f.Name)
	if err := os.WriteFile(tmp, []byte(f.Content), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(w.dir, f.Name))
}

func (w *dirWorld) Delete(_ context.Context, _ strata.ReadTxn, _ strata.Revision, f *file) error {
	if err := os.Remove(filepath.Join(w.dir, f.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (w *dirWorld) Prune(_ context.Context, _ strata.ReadTxn, desired iter.Seq2[*file, strata.Revision]) error {
	want := map[string]bool{}
	for f := range desired {
		want[f.Name] = true
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !want[e.Name()] {
			if err := os.Remove(filepath.Join(w.dir, e.Name())); err != nil {
				return err
			}
		}
	}
	w.mu.Lock()
	w.prunes++
	w.mu.Unlock()
	return nil
}

// retryMin and retryMax are the reconcilers' backoff, without jitter so
// that the test can check when retries come.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
)

func backoff(attempts uint32) time.Duration {
	d := retryMin
	for i := uint32(1); i < attempts && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}

// open opens the store in dir and a reconciler of its table into dir/world,
// with the options of the test's reconcilers and then opts.
func open(t testing.TB, dir string, failing bool, opts ...reconciler.Option) (*strata.DB, strata.RWTable[*file], *persist.Store, *reconciler.Reconciler[*file], *dirWorld) {
	db := strata.New()
	tbl, err := strata.NewTable(db, "files", fileByName)
	if err != nil {
		fatal(t, err)
	}
	store, err := persist.Open(filepath.Join(dir, "store"), persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fatal(t, err)
	}
	if err := persist.Register(store, db, tbl, persist.Binary[file]()); err != nil {
		fatal(t, err)
	}
	world := &dirWorld{dir: filepath.Join(dir, "world"), failing: failing, attempts: map[string][]time.Time{}}
	if err := os.MkdirAll(world.dir, 0o755); err != nil {
		fatal(t, err)
	}
	r, err := reconciler.New(db, reconciler.Config[*file]{
		Table: tbl, CloneObject: (*file).Clone,
		GetObjectStatus: (*file).GetStatus, SetObjectStatus: (*file).SetStatus,
		Operations: world,
	}, append([]reconciler.Option{reconciler.WithWorkers(4), reconciler.WithRetry(retryMin, retryMax), reconciler.WithJitter(0, nil),
		reconciler.WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
	if err != nil {
		fatal(t, err)
	}
	return db, tbl, store, r, world
}

func fatal(t testing.TB, err error) {
	if t == nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	t.Helper()
	t.Fatal(err)
}

// child reconciles and writes random changes until it is killed.
func child(dir string, seed uint64) {
	db, tbl, _, r, _ := open(nil, dir, true)
	go r.Run(context.Background(), nil)
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := 0; ; i++ {
		wtxn := db.WriteTxn(tbl)
		for range 1 + rng.IntN(4) {
			name := fmt.Sprintf("f%02d", rng.IntN(40))
			if rng.IntN(8) == 0 {
				name = fmt.Sprintf("bad-%d", rng.IntN(4))
			}
			if rng.IntN(4) == 0 {
				tbl.Delete(wtxn, &file{Name: name})
			} else {
				tbl.Insert(wtxn, &file{Name: name, Content: fmt.Sprintf("%d/%d", seed, i), Status: reconciler.StatusPending()})
			}
		}
		if _, err := wtxn.Commit(); err != nil {
			fatal(nil, err)
		}
		time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
	}
}

// TestReconcilerRestart kills a reconciling process with SIGKILL at random
// points, many times over; then a new reconciler in this process first
// resumes the backoff of the objects it finds in Error (they still fail),
// and, once the world stops refusing them, converges: the directory holds
// exactly the table's files, and every status is Done.
func TestReconcilerRestart(t *testing.T) {
	n := *cycles
	if n == 0 {
		n = 20
		if testing.Short() {
			n = 6
		}
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for cycle := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(cycle+1), childDirEnv+"="+dir)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(100+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("cycle %d: the child ended with %v before it was killed:\n%s", cycle, err, stderr.String())
		}
	}

	db, tbl, store, r, world := open(t, dir, true)
	defer store.Close()
	type failed struct {
		attempts uint32
		at       time.Time
	}
	inError := map[string]failed{}
	total := 0
	for f := range tbl.All(db.ReadTxn()) {
		total++
		if f.Status.Kind == reconciler.StatusKindError {
			inError[f.Name] = failed{f.Status.Attempts, f.Status.UpdatedAt}
		}
	}
	if total == 0 {
		t.Fatal("the killed processes left an empty table")
	}
	if len(inError) == 0 {
		t.Fatal("no object in Error after the kills; the test would check nothing of backoff")
	}
	t.Logf("after %d kills: %d objects, %d of them in Error", n, total, len(inError))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	restart := time.Now()
	go func() { done <- r.Run(ctx, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	// The objects in Error still fail: each is retried once its backoff
	// from the persisted status has passed (or, if that passed while no
	// process ran, within one backoff of the restart), and its attempts
	// count on from the persisted number.
	time.Sleep(2*retryMax + time.Second)
	world.mu.Lock()
	for name, f := range inError {
		at := world.attempts[name]
		if len(at) == 0 {
			t.Errorf("%s (in Error, %d attempts) was not retried after the restart", name, f.attempts)
			continue
		}
		due := f.at.Add(backoff(f.attempts))
		const slack = 200 * time.Millisecond
		switch {
		case due.After(restart) && at[0].Before(due.Add(-slack/4)):
			t.Errorf("%s retried %s after the restart, before its backoff ended (%s)", name, at[0].Sub(restart), due.Sub(restart))
		case !due.After(restart) && at[0].After(restart.Add(backoff(f.attempts)+slack)):
			t.Errorf("%s retried %s after the restart, later than one backoff (%s)", name, at[0].Sub(restart), backoff(f.attempts))
		}
	}
	world.failing = false
	world.mu.Unlock()
	for name, f := range inError {
		o, _, ok := tbl.Get(db.ReadTxn(), fileByName.Query(name))
		if ok && o.Status.Kind == reconciler.StatusKindError && o.Status.Attempts <= f.attempts {
			t.Errorf("%s: %d attempts after retries, was %d: the count started over", name, o.Status.Attempts, f.attempts)
		}
	}

	// Once the world takes bad- files again (their next retry, at most
	// retryMax away), everything converges; a prune removes what deletes
	// the kills interrupted left behind.
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(retryMax + 100*time.Millisecond)
		world.mu.Lock()
		prunes := world.prunes
		world.mu.Unlock()
		r.Prune()
		for world.prunesSince(prunes) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		err := converged(db, tbl, world.dir)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not converged 30s after the restart: %v\nstats %+v", err, r.Stats())
		}
	}
}

func (w *dirWorld) prunesSince(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.prunes - n
}

// converged reports whether the directory holds exactly the table's files
// and every status is Done.
func converged(db *strata.DB, tbl strata.Table[*file], dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	onDisk := map[string]string{}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		onDisk[e.Name()] = string(b)
	}
	n := 0
	for f := range tbl.All(db.ReadTxn()) {
		n++
		if f.Status.Kind != reconciler.StatusKindDone {
			return fmt.Errorf("%s: status %s", f.Name, f.Status)
		}
		if c, ok := onDisk[f.Name]; !ok || c != f.Content {
			return fmt.Errorf("%s: disk has %q (%v), table %q", f.Name, c, ok, f.Content)
		}
	}
	if len(onDisk) != n {
		return fmt.Errorf("the directory holds %d files, the table %d", len(onDisk), n)
	}
	return nil
}
