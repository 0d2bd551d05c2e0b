package reconcilerrestart

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-db/strata/reconciler"
)

// convergeChild writes n files, waits until every one is Done, says so on
// stdout, and waits to be killed.
func convergeChild(dir string, n int) {
	db, tbl, _, r, _ := open(nil, dir, false)
	go func() {
		if err := r.Run(context.Background(), nil); err != nil {
			fatal(nil, err)
		}
	}()
	wtxn := db.WriteTxn(tbl)
	for i := range n {
		if _, _, err := tbl.Insert(wtxn, &file{Name: fmt.Sprintf("f%03d", i), Content: "v1", Status: reconciler.StatusPending()}); err != nil {
			fatal(nil, err)
		}
	}
	rev := tbl.Revision(wtxn)
	if _, err := wtxn.Commit(); err != nil {
		fatal(nil, err)
	}
	got, low, err := r.WaitUntilReconciled(context.Background(), rev)
	if err != nil || got < rev || low != 0 {
		fatal(nil, fmt.Errorf("WaitUntilReconciled(%d) = %d, %d, %v", rev, got, low, err))
	}
	fmt.Println("converged")
	select {}
}

// TestRefreshAfterRestart: a process converges a table of files into a
// directory and is killed with SIGKILL. While no process runs, some files
// are deleted and others altered: the table's Done statuses are now
// claims about a world that changed. A new reconciler refreshes every
// object Done before its start, at the refresh rate, in the background:
// the damaged files are written again, and the intact ones cost one
// Update each (the refresh), no more.
func TestRefreshAfterRestart(t *testing.T) {
	const (
		n    = 60
		rate = 40 // refresh marks per second: n take 1.5s
	)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.Itoa(n), childDirEnv+"="+dir, childModeEnv+"=converge")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	said := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		said <- line
	}()
	select {
	case line := <-said:
		if line != "converged\n" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child said %q:\n%s", line, stderr.String())
		}
	case <-time.After(hang):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child did not converge in %s:\n%s", hang, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	if err := cmd.Wait(); err == nil || cmd.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the child ended with %v, not killed:\n%s", err, stderr.String())
	}

	// The world changes while no process runs.
	worldDir := filepath.Join(dir, "world")
	damaged := map[string]bool{}
	for i := 0; i < n; i += 7 {
		name := fmt.Sprintf("f%03d", i)
		damaged[name] = true
		if i%2 == 0 {
			err = os.Remove(filepath.Join(worldDir, name))
		} else {
			err = os.WriteFile(filepath.Join(worldDir, name), []byte("drifted"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	db, tbl, store, r, world := open(t, dir, false, reconciler.WithRefresh(time.Hour, rate))
	defer store.Close()
	for f := range tbl.All(db.ReadTxn()) {
		if f.Status.Kind != reconciler.StatusKindDone {
			t.Fatalf("%s: %s after the kill, want Done (the child converged)", f.Name, f.Status)
		}
	}
	if converged(db, tbl, worldDir) == nil {
		t.Fatal("the damage did not show")
	}
	restart := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, nil) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	waitFor(t, "the refresh of every object", func() error {
		if err := converged(db, tbl, worldDir); err != nil {
			return err
		}
		refreshed := 0
		for f := range tbl.All(db.ReadTxn()) {
			if f.Status.UpdatedAt.After(restart) {
				refreshed++
			}
		}
		if refreshed < n {
			return fmt.Errorf("%d of %d refreshed", refreshed, n)
		}
		return nil
	})
	// Then the reconciler has nothing left to do: no other Update comes
	// (the next refresh is an hour away).
	waitFor(t, "an idle reconciler", func() error {
		if st := r.Stats(); st.Parked+st.Delayed+st.InFlight > 0 || st.Queued != [len(st.Queued)]int{} {
			return fmt.Errorf("stats %+v", st)
		}
		return nil
	})

	world.mu.Lock()
	defer world.mu.Unlock()
	var marks, times []time.Time
	for i := range n {
		name := fmt.Sprintf("f%03d", i)
		at := world.attempts[name]
		if len(at) != 1 {
			t.Errorf("%s (damaged %v): %d Updates after the restart, want 1 (the refresh)", name, damaged[name], len(at))
		}
		for _, a := range at {
			if a.status.Kind != reconciler.StatusKindRefreshing {
				t.Errorf("%s: Update after the restart saw %s, want Refreshing", name, a.status)
			}
			marks, times = append(marks, a.status.UpdatedAt), append(times, a.at)
		}
	}
	if len(world.attempts) != n {
		t.Errorf("Updates of %d files, the table has %d", len(world.attempts), n)
	}
	// The rate, from the times of the Refreshing marks the Updates saw
	// (which the reconciler sets, however late the Updates run): marks go
	// in batches of a tenth of a second's worth, each batch at least a
	// gap after the round that marked the one before began, and that
	// round began after the marks before it were made. So the last mark
	// comes at least (batches - 2) gaps after the first: a delayed round
	// stretches the span, it cannot shorten it.
	slices.SortFunc(marks, time.Time.Compare)
	slices.SortFunc(times, time.Time.Compare)
	batch := rate / 10
	least := time.Duration(n/batch-2) * time.Second / 10
	if span := marks[len(marks)-1].Sub(marks[0]); span < least {
		t.Errorf("%d refresh marks in %s, faster than %d per second (at least %s)", n, span, rate, least)
	}
	t.Logf("%d refreshes (%d of damaged files) from %s to %s after the restart", n, len(damaged),
		times[0].Sub(restart).Round(time.Millisecond), times[len(times)-1].Sub(restart).Round(time.Millisecond))
}
