// Command restart keeps a table of events in a persisted Strata table, and
// shows that it comes back after a restart, and after kill -9.
//
// Each run opens the store in -dir, loads the table, reports what it found
// and checks it, then adds -n events and exits:
//
//	go run ./examples/restart -dir /tmp/strata-restart
//	go run ./examples/restart -dir /tmp/strata-restart   # finds the first run's events
//
// With -crash it shows a crash: it starts itself again as a child process
// that adds events until it is killed (-loop), reads the sequence number
// the child prints once each commit has returned (in the default Sync
// mode: once it is on disk), kills the child with SIGKILL -for (one
// second) after its first event, then opens the store and checks that
// every event the child reported is there:
//
//	go run ./examples/restart -crash -dir /tmp/strata-restart
//
// With -loop alone it adds events until it is killed, for killing by hand:
//
//	go build -o /tmp/restart ./examples/restart
//	/tmp/restart -dir /tmp/strata-restart -loop & sleep 2; kill -9 $!
//	/tmp/restart -dir /tmp/strata-restart
//
// With -buffered the store syncs every 100ms instead: a kill -9 may then
// lose the events of the last interval, never part of one, and -crash
// reports how many were lost.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// Event is one event a run added.
type Event struct {
	Seq  uint64    // 1, 2, 3, ... across all runs
	Run  uint64    // the run that added it
	At   time.Time // when
	Text string
}

var (
	eventBySeq = strata.Index[*Event, uint64]{
		Name:       "seq",
		FromObject: func(e *Event) index.KeySet { return index.KeySetOf(index.Uint64(e.Seq)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	eventByRun = strata.Index[*Event, uint64]{
		Name:       "run",
		FromObject: func(e *Event) index.KeySet { return index.KeySetOf(index.Uint64(e.Run)) },
		FromKey:    index.Uint64,
	}
)

func main() {
	dir := flag.String("dir", os.TempDir()+"/strata-restart", "the store's directory")
	n := flag.Int("n", 3, "events to add")
	loop := flag.Bool("loop", false, "add events until killed")
	buffered := flag.Bool("buffered", false, "sync every 100ms instead of at every commit")
	crash := flag.Bool("crash", false, "run a child that adds events, kill it with SIGKILL, and check the store")
	runFor := flag.Duration("for", time.Second, "with -crash, how long the child adds events before it is killed")
	flag.Parse()
	if *crash {
		crashAndCheck(*dir, *buffered, *runFor)
		return
	}

	opts := persist.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if *buffered {
		opts.Sync = persist.Buffered{Interval: 100 * time.Millisecond}
	}
	start := time.Now()
	store, db, events := open(*dir, opts)
	defer store.Close()
	txn := db.ReadTxn()
	seq, run := check(txn, events)
	fmt.Printf("opened %s in %v: %d events from %d runs, revision %d\n",
		*dir, time.Since(start).Round(time.Millisecond), events.NumObjects(txn), run, events.Revision(txn))
	if last, _, ok := events.Get(txn, eventBySeq.Query(seq)); ok {
		fmt.Printf("last event: %q at %s\n", last.Text, last.At.Format(time.RFC3339Nano))
	}
	if unknown := store.Unregistered(); len(unknown) > 0 {
		fmt.Printf("the store also holds tables nobody registered: %v\n", unknown)
	}

	run++
	for i := 0; *loop || i < *n; i++ {
		seq++
		txn := db.WriteTxn(events)
		if _, _, err := events.Insert(txn, &Event{Seq: seq, Run: run, At: time.Now(), Text: fmt.Sprintf("event %d of run %d", i+1, run)}); err != nil {
			log.Fatal(err)
		}
		if _, err := txn.Commit(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("committed event %d\n", seq)
		if *loop {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// check verifies that the events are numbered 1..n without a gap, and that
// the run index holds each of them; it returns the last sequence number
// and run.
func check(txn strata.ReadTxn, events strata.Table[*Event]) (seq, run uint64) {
	for e := range events.All(txn) {
		if e.Seq != seq+1 {
			log.Fatalf("event %d follows event %d: a gap", e.Seq, seq)
		}
		seq, run = e.Seq, max(run, e.Run)
		found := false
		for o := range events.List(txn, eventByRun.Query(e.Run)) {
			found = found || o == e
		}
		if !found {
			log.Fatalf("event %d missing from the run index", e.Seq)
		}
	}
	return seq, run
}

// open opens the store in dir and registers the table of events.
func open(dir string, opts persist.Options) (*persist.Store, *strata.DB, strata.RWTable[*Event]) {
	store, err := persist.Open(dir, opts)
	if err != nil {
		log.Fatal(err)
	}
	db := strata.New()
	events := strata.MustNewTable(db, "events", eventBySeq, eventByRun)
	if err := store.Register(persist.Table(events, persist.JSON[*Event]())); err != nil {
		log.Fatal(err)
	}
	return store, db, events
}

// crashAndCheck runs this program as a child with -loop on dir, kills it
// with SIGKILL runFor after its first event, and checks that the store
// holds every event the child reported committed.
func crashAndCheck(dir string, buffered bool, runFor time.Duration) {
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	args := []string{"-dir", dir, "-loop"}
	if buffered {
		args = append(args, "-buffered")
	}
	child := exec.Command(self, args...)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		log.Fatal(err)
	}
	if err := child.Start(); err != nil {
		log.Fatal(err)
	}
	acked := make(chan uint64)
	go func() {
		defer close(acked)
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			if n, ok := strings.CutPrefix(lines.Text(), "committed event "); ok {
				if seq, err := strconv.ParseUint(n, 10, 64); err == nil {
					acked <- seq
				}
			}
		}
	}()
	// The kill comes runFor after the child's first event, however long
	// it took to start.
	var last uint64
	var kill <-chan time.Time
	for killed := false; !killed; {
		select {
		case seq, ok := <-acked:
			if !ok {
				log.Fatal("the child ended before it was killed")
			}
			if kill == nil {
				kill = time.After(runFor)
			}
			last = seq
		case <-kill:
			// Process.Kill sends SIGKILL: the child gets no chance to
			// close the store or flush anything.
			if err := child.Process.Kill(); err != nil {
				log.Fatal(err)
			}
			killed = true
		}
	}
	for seq := range acked {
		last = seq // printed before the kill landed
	}
	child.Wait()
	fmt.Printf("killed the writer with SIGKILL after it reported event %d committed\n", last)

	store, db, events := open(dir, persist.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	defer store.Close()
	seq, _ := check(db.ReadTxn(), events)
	switch {
	case seq >= last:
		fmt.Printf("reopened: events 1 to %d are there (%d committed in flight when it was killed)\n", seq, seq-last)
	case buffered:
		fmt.Printf("reopened: events 1 to %d are there; %d acknowledged events were lost, as Buffered mode allows\n", seq, last-seq)
	default:
		log.Fatalf("reopened: events 1 to %d are there, but event %d was acknowledged", seq, last)
	}
}
