// Command restart keeps a table of events in a persisted Strata table, and
// shows that it comes back after a restart, and after kill -9.
//
// Each run opens the store in -dir, loads the table, reports what it found
// and checks it, then adds -n events and exits:
//
//	go run ./examples/restart -dir /tmp/strata-restart
//	go run ./examples/restart -dir /tmp/strata-restart   # finds the first run's events
//
// With -loop it adds events until it is killed, printing the sequence
// number of each once its commit has returned (in the default Sync mode:
// once it is on disk). Kill it with SIGKILL and start it again: every
// printed event is there. Build it first, so that the kill reaches the
// program itself rather than the go command:
//
//	go build -o /tmp/restart ./examples/restart
//	/tmp/restart -dir /tmp/strata-restart -loop & sleep 2; kill -9 $!
//	/tmp/restart -dir /tmp/strata-restart
//
// With -buffered the store syncs every 100ms instead: a kill -9 may then
// lose the events of the last interval, never part of one.
package main

import (
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
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
	flag.Parse()

	opts := persist.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	if *buffered {
		opts.Sync = persist.Buffered{Interval: 100 * time.Millisecond}
	}
	start := time.Now()
	store, err := persist.Open(*dir, opts)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	db := strata.New()
	events := strata.MustNewTable(db, "events", eventBySeq, eventByRun)
	if err := store.Register(persist.Table(events, persist.JSON[*Event]())); err != nil {
		log.Fatal(err)
	}
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
		events.Insert(txn, &Event{Seq: seq, Run: run, At: time.Now(), Text: fmt.Sprintf("event %d of run %d", i+1, run)})
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
