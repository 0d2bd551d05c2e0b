// Package reconcilerrestart tests package reconciler on a durable table
// (package persist): a process reconciling a table into files in a
// directory is killed with SIGKILL at random points, again and again, and a
// new reconciler must then converge, resuming the backoff of the objects it
// finds in Error; and the Done objects a killed process left are
// refreshed after the restart, at the refresh rate, repairing the files
// that changed while no process ran.
package reconcilerrestart

import (
	"bufio"
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
	"slices"
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
	attempts map[string][]attempt // Update calls, by name, in order
	prunes   int
}

// attempt is one Update call: when it came, and the status of the object
// it was given (the Pending or Refreshing status that made the attempt).
type attempt struct {
	at     time.Time
	status reconciler.Status
}

var errRefused = errors.New("the world refuses bad- files")

func (w *dirWorld) Update(_ context.Context, _ strata.ReadTxn, _ strata.Revision, f *file) error {
	w.mu.Lock()
	w.attempts[f.Name] = append(w.attempts[f.Name], attempt{time.Now(), f.Status})
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
// that the test can check when retries come. (The reconciler that
// TestReconcilerRestart starts after the kills begins its backoff where
// splitBackoff says.)
const (
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
)

// backoff is the reconcilers' wait after attempts failed attempts, for
// a backoff that begins at from.
func backoff(from time.Duration, attempts uint32) time.Duration {
	d := from
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
	world := &dirWorld{dir: filepath.Join(dir, "world"), failing: failing, attempts: map[string][]attempt{}}
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

// child reconciles and writes random changes until it is killed. After
// each commit it prints a line saying what is durable: a commit returns
// once the store has synced it, and a read shows only synced commits
// (the reconciler's status writes included). The parent kills it after a
// random number of such lines, so that the kills fall at points defined
// by the child's progress, however slow the machine is.
func child(dir string, seed uint64) {
	db, tbl, _, r, _ := open(nil, dir, true)
	go func() {
		if err := r.Run(context.Background(), nil); err != nil {
			fatal(nil, err)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, 0))
	for i := 0; ; i++ {
		wtxn := db.WriteTxn(tbl)
		for range 1 + rng.IntN(4) {
			name := fmt.Sprintf("f%02d", rng.IntN(40))
			if rng.IntN(8) == 0 {
				name = fmt.Sprintf("bad-%d", rng.IntN(4))
			}
			if rng.IntN(4) == 0 {
				if _, _, err := tbl.Delete(wtxn, &file{Name: name}); err != nil {
					fatal(nil, err)
				}
			} else {
				if _, _, err := tbl.Insert(wtxn, &file{Name: name, Content: fmt.Sprintf("%d/%d", seed, i), Status: reconciler.StatusPending()}); err != nil {
					fatal(nil, err)
				}
			}
		}
		if _, err := wtxn.Commit(); err != nil {
			fatal(nil, err)
		}
		objects, inError := 0, 0
		for f := range tbl.All(db.ReadTxn()) {
			objects++
			if f.Status.Kind == reconciler.StatusKindError {
				inError++
			}
		}
		fmt.Printf("commit %d durable: %d objects, %d in Error\n", i, objects, inError)
		time.Sleep(time.Duration(rng.IntN(5)) * time.Millisecond)
	}
}

// maxLines bounds the lines a child prints before it is killed: about the
// work of a few hundred milliseconds of an idle machine.
const maxLines = 100

// hang bounds every wait of these tests. Only code that hangs reaches it,
// however loaded the machine: a slow machine makes the tests slower, it
// does not fail them.
const hang = 2 * time.Minute

// clockSlack is what the test allows between the reconciler's clock
// (monotonic, from its start) and the wall clock of the statuses.
const clockSlack = time.Millisecond

// killAfter runs a child on dir with the seed, kills it with SIGKILL once
// it has printed lines lines (what it did durably), and returns the last
// of them.
func killAfter(t *testing.T, dir string, seed, lines int) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(seed), childDirEnv+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The reader owns last until it closes eof; it reads on after the
	// kill, to the end of the pipe, so that Wait comes after the reads.
	reached, eof := make(chan struct{}), make(chan struct{})
	var last string
	go func() {
		defer close(eof)
		sc := bufio.NewScanner(stdout)
		for n := 1; sc.Scan(); n++ {
			if n == lines {
				last = sc.Text()
				close(reached)
			}
		}
	}()
	timeout := time.NewTimer(hang)
	defer timeout.Stop()
	select {
	case <-reached:
	case <-eof:
	case <-timeout.C:
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-eof
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child %d ended with %v before it was killed:\n%s", seed, err, stderr.String())
	}
	select {
	case <-reached:
	default:
		t.Fatalf("child %d printed fewer than %d lines in %s:\n%s", seed, lines, hang, stderr.String())
	}
	return last
}

// failed is an object found in Error: its status's attempts and time.
type failed struct {
	attempts uint32
	at       time.Time
}

// survey opens the store in dir, counts the table's objects, returns
// those in Error, and closes the store.
func survey(t *testing.T, dir string) (objects int, inError map[string]failed) {
	db, tbl, store, _, _ := open(t, dir, true)
	inError = map[string]failed{}
	for f := range tbl.All(db.ReadTxn()) {
		objects++
		if f.Status.Kind == reconciler.StatusKindError {
			inError[f.Name] = failed{f.Status.Attempts, f.Status.UpdatedAt}
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return objects, inError
}

// splitBackoff returns a start of the backoff (retryMin of a reconciler)
// at which some of the failures are still in their backoff at now, and
// the others past it, where their times allow: a failure of a attempts
// at time u is in its backoff while from·2^(a-1) > now-u. So that a
// restarted reconciler has both kinds to resume, whatever the kills left;
// the time it takes to start moves objects from the first kind to the
// second, and the checks hold for either.
func splitBackoff(failures map[string]failed, now time.Time) time.Duration {
	var ends []time.Duration
	for _, f := range failures {
		ends = append(ends, now.Sub(f.at)>>min(f.attempts-1, 30))
	}
	slices.Sort(ends)
	from := 2 * ends[0]
	if len(ends) > 1 {
		from = (ends[len(ends)/2-1] + ends[len(ends)/2]) / 2
	}
	return min(max(from, time.Millisecond), retryMax)
}

// waitFor polls cond until it returns nil, and fails the test if that
// takes longer than hang.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(hang)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, hang, err)
		}
		time.Sleep(10 * time.Millisecond)
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
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)
	// The kills go on past n until the table holds an object in Error
	// (almost always at once): whether a kill leaves one is chance, and
	// the test of backoff needs one.
	const extra = 20
	var inError map[string]failed
	var surveyed time.Duration // how long the last survey took
	for kills := 0; ; kills++ {
		if kills >= n {
			var objects int
			start := time.Now()
			objects, inError = survey(t, dir)
			if surveyed = time.Since(start); len(inError) > 0 {
				t.Logf("%d kills left %d objects, %d of them in Error", kills, objects, len(inError))
				break
			}
			if kills == n+extra {
				t.Fatalf("%d kills left %d objects, none in Error: the test would check nothing of backoff", kills, objects)
			}
		}
		lines := 1 + rng.IntN(maxLines)
		last := killAfter(t, dir, kills+1, lines)
		t.Logf("kill %d after %d lines: %s", kills+1, lines, last)
	}

	// The split is for when the reconciler will have started: about as
	// long from now as the survey, which opened the same store, took.
	from := splitBackoff(inError, time.Now().Add(surveyed))
	t.Logf("the restarted reconciler's backoff begins at %s (survey %s)", from, surveyed)
	// The restore is watched from the reconciler's rounds: after each, its
	// loop reports its figures (Metrics.Progress) and waits for the report
	// to return. So an object's first Inspection other than Unseen is from
	// the round that took it up, before that round's end could dispatch
	// it, however slow the machine; and the round, hence the restore's
	// clock reading, began before that Inspection (seen).
	type sighting struct {
		in   reconciler.Inspection
		seen time.Time
	}
	var (
		mu        sync.Mutex
		sightings = map[string]sighting{}
		r         *reconciler.Reconciler[*file]
	)
	watch := roundMetrics{reconciler.NopMetrics{}.Reconciler(""), func() {
		mu.Lock()
		defer mu.Unlock()
		for name := range inError {
			if _, ok := sightings[name]; !ok {
				if in, _ := r.Inspect(index.String(name)); in.Phase != reconciler.PhaseUnseen {
					sightings[name] = sighting{in, time.Now()}
				}
			}
		}
	}}
	db, tbl, store, r, world := open(t, dir, true, reconciler.WithRetry(from, retryMax), reconciler.WithMetrics(watch))
	defer store.Close()
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
	waitFor(t, "the objects in Error taken up by the new reconciler", func() error {
		mu.Lock()
		defer mu.Unlock()
		if len(sightings) < len(inError) {
			return fmt.Errorf("%d of %d", len(sightings), len(inError))
		}
		return nil
	})

	// Each object in Error is taken up waiting for its retry, its
	// attempts counted on from the persisted number. If the backoff from
	// its persisted status (the status's time plus the backoff of its
	// attempts) had not ended when the reconciler started, the next
	// attempt is when it ends; otherwise it is at a random point within
	// one backoff of the start, so that the objects found in Error are
	// not all retried at once. The start lies between restart and seen: a
	// slow machine widens the bounds, it cannot break them.
	next := map[string]time.Time{}
	var spread []time.Time
	for name, f := range inError {
		due, b := f.at.Add(backoff(from, f.attempts)), backoff(from, f.attempts)
		in, seen := sightings[name].in, sightings[name].seen
		at := func(x time.Time) time.Duration { return x.Sub(restart).Round(time.Millisecond) }
		t.Logf("%s: %d attempts, backoff ends %s after the restart; taken up by %s: %s after %d attempts, next at %s",
			name, f.attempts, at(due), at(seen), in.Phase, in.Attempts, max(at(in.NextAttempt), 0))
		switch {
		case in.Attempts != f.attempts:
			t.Errorf("%s: taken up after %d attempts, was %d: the count did not go on", name, in.Attempts, f.attempts)
		case in.Phase != reconciler.PhaseBackoff:
			t.Errorf("%s (in Error, %d attempts) taken up %s, not waiting for its retry", name, f.attempts, in.Phase)
		case in.NextAttempt.Equal(due):
			next[name] = due
		case in.NextAttempt.Before(due):
			t.Errorf("%s: next attempt %s after the restart, before its backoff ends (%s)", name, at(in.NextAttempt), at(due))
		case due.After(seen):
			t.Errorf("%s: next attempt %s after the restart, not when its backoff ends (%s)", name, at(in.NextAttempt), at(due))
		case in.NextAttempt.Before(restart) || !in.NextAttempt.Before(seen.Add(b)):
			t.Errorf("%s: next attempt %s after the restart, not within one backoff (%s) of the start (between 0 and %s)",
				name, at(in.NextAttempt), b, at(seen))
		default:
			next[name] = in.NextAttempt
			spread = append(spread, in.NextAttempt)
		}
	}
	slices.SortFunc(spread, time.Time.Compare)
	for i := 1; i < len(spread); i++ {
		if spread[i].Equal(spread[i-1]) {
			t.Errorf("objects whose backoff ended before the restart are all retried %s after it: all at once", spread[i].Sub(restart))
		}
	}

	// The retries: each fails, and its status counts it, on from the
	// persisted number.
	waitFor(t, "a retry of every object in Error", func() error {
		for name, f := range inError {
			o, _, ok := tbl.Get(db.ReadTxn(), fileByName.Query(name))
			if !ok || o.Status.Attempts <= f.attempts {
				return fmt.Errorf("%s: %v, %s", name, ok, o.Status)
			}
		}
		return nil
	})
	for name, f := range inError {
		before := world.attemptsOf(name)
		o, _, _ := tbl.Get(db.ReadTxn(), fileByName.Query(name))
		after := world.attemptsOf(name)
		if o.Status.Kind != reconciler.StatusKindError {
			t.Errorf("%s: %s while the world refuses it", name, o.Status)
		}
		// Each Update the world saw is counted in the status once its
		// outcome is written; one may be in flight.
		if counted := int(o.Status.Attempts - f.attempts); counted > len(after) || counted < len(before)-1 {
			t.Errorf("%s: %d attempts counted since the restart, the world saw %d", name, counted, len(after))
		}
		if len(after) == 0 {
			t.Errorf("%s: no Update after the restart", name)
			continue
		}
		// The Updates come in order, each with the status of the failure
		// it retries: the first retries the persisted one.
		for i, a := range after {
			if want := f.attempts + uint32(i); a.status.Attempts != want || a.status.Kind != reconciler.StatusKindPending {
				t.Errorf("%s: Update %d after the restart saw %s (%d attempts), want Pending after %d", name, i, a.status, a.status.Attempts, want)
			}
		}
		if got := after[0].status.UpdatedAt; !got.Equal(f.at) {
			t.Errorf("%s: the first retry after the restart saw a status of %s, the persisted one is of %s", name, got, f.at)
		}
		first := after[0].at
		if due := f.at.Add(backoff(from, f.attempts)); first.Before(due.Add(-clockSlack)) {
			t.Errorf("%s retried %s after the restart, before its backoff ended (%s)", name, first.Sub(restart), due.Sub(restart))
		}
		if at, ok := next[name]; ok && first.Before(at.Add(-clockSlack)) {
			t.Errorf("%s retried %s after the restart, before its next attempt (%s)", name, first.Sub(restart), at.Sub(restart))
		}
	}

	// Once the world takes bad- files again (their next retry), everything
	// converges; a prune removes what deletes the kills interrupted left
	// behind.
	world.mu.Lock()
	world.failing = false
	world.mu.Unlock()
	waitFor(t, "convergence", func() error {
		if st := r.Stats(); st.Parked+st.Delayed+st.InFlight > 0 || st.Queued != [len(st.Queued)]int{} {
			return fmt.Errorf("stats %+v", st)
		}
		prunes := world.prunesSince(0)
		r.Prune()
		waitFor(t, "a prune", func() error {
			if world.prunesSince(prunes) == 0 {
				return errors.New("none done")
			}
			return nil
		})
		return converged(db, tbl, world.dir)
	})
}

// roundMetrics calls onRound at the end of each round of the reconciler
// (Metrics.Progress, which its loop calls and waits for); it discards
// the other measurements.
type roundMetrics struct {
	reconciler.ReconcilerMetrics
	onRound func()
}

func (m roundMetrics) Reconciler(string) reconciler.ReconcilerMetrics { return m }
func (m roundMetrics) Progress(reconciler.Stats)                      { m.onRound() }

// attemptsOf returns a copy of the Updates of the file name.
func (w *dirWorld) attemptsOf(name string) []attempt {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.attempts[name])
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
