package strata

// Tests of initializers (initializers.go).

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// A regression the adversarial trial of the public API found (its case 4):
// Initialized's channel must close when an initializer is registered and
// done in one transaction, and the channel handed out while an initializer
// was pending must not be abandoned when another is registered in the
// transaction that marks the first done.
func TestRegressInitializedChannel(t *testing.T) {
	t.Run("registered and done in one txn", func(t *testing.T) {
		db := New()
		tbl := newTestTable(t, db, "t")
		txn := db.WriteTxn(tbl)
		done := tbl.RegisterInitializer(txn, "a")
		_, ch := tbl.Initialized(txn)
		done(txn)
		rtxn, err := txn.Commit()
		must(t, err)
		ok, ch2 := tbl.Initialized(rtxn)
		if !ok {
			t.Fatal("not initialized")
		}
		for _, c := range []<-chan struct{}{ch, ch2} {
			if !mdlClosed(c) {
				t.Fatal("Initialized is true, but its channel is open")
			}
		}
	})
	t.Run("done(a) then register(b) in one txn", func(t *testing.T) {
		db := New()
		tbl := newTestTable(t, db, "t")
		txn := db.WriteTxn(tbl)
		doneA := tbl.RegisterInitializer(txn, "a")
		rtxn, err := txn.Commit()
		must(t, err)
		_, waitA := tbl.Initialized(rtxn)

		txn = db.WriteTxn(tbl)
		doneA(txn)
		doneB := tbl.RegisterInitializer(txn, "b")
		_, err = txn.Commit()
		must(t, err)
		if mdlClosed(waitA) {
			t.Fatal("the channel closed while b is pending")
		}
		txn = db.WriteTxn(tbl)
		doneB(txn)
		rtxn, err = txn.Commit()
		must(t, err)
		if ok, ch := tbl.Initialized(rtxn); !ok || !mdlClosed(ch) {
			t.Fatalf("after done(b): initialized %v, channel closed %v", ok, mdlClosed(ch))
		}
		if !mdlClosed(waitA) {
			t.Fatal("the channel handed out while a was pending never closed")
		}
	})
	t.Run("registered in an aborted txn", func(t *testing.T) {
		db := New()
		tbl := newTestTable(t, db, "t")
		txn := db.WriteTxn(tbl)
		tbl.RegisterInitializer(txn, "a")
		_, ch := tbl.Initialized(txn)
		txn.Abort()
		if ok, _ := tbl.Initialized(db.ReadTxn()); !ok || !mdlClosed(ch) {
			t.Fatalf("after abort: initialized %v, channel read through the aborted txn closed %v", ok, mdlClosed(ch))
		}
	})
}

// TestInitializerSequences: random sequences of RegisterInitializer and
// done calls, several in one transaction, committed or aborted. A channel
// Initialized returns (through the transaction, or not) is closed if it
// said initialized; otherwise it closes exactly when the table, as
// committed, is initialized. Initialized says what the model says.
func TestInitializerSequences(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		db := New()
		tbl := newTestTable(t, db, "t")
		pending := map[string]func(WriteTxn){} // committed
		var chans []<-chan struct{}
		var closed []bool // what each channel must be
		next := 0
		for range 4 {
			txn := db.WriteTxn(tbl)
			mine := maps.Clone(pending)
			var log []string
			for range 1 + r.IntN(4) {
				if len(mine) > 0 && r.IntN(2) == 0 {
					names := slices.Sorted(maps.Keys(mine))
					name := names[r.IntN(len(names))]
					mine[name](txn)
					delete(mine, name)
					log = append(log, "done("+name+")")
				} else {
					next++
					name := fmt.Sprint("i", next)
					mine[name] = tbl.RegisterInitializer(txn, name)
					log = append(log, "register("+name+")")
				}
				ok, ch := tbl.Initialized(txn)
				if ok != (len(mine) == 0) {
					t.Fatalf("round %d: %v: Initialized(txn) = %v with %d pending", round, log, ok, len(mine))
				}
				chans, closed = append(chans, ch), append(closed, ok)
			}
			if r.IntN(3) == 0 {
				txn.Abort()
				log = append(log, "Abort")
			} else {
				_, err := txn.Commit()
				must(t, err)
				pending = mine
				log = append(log, "Commit")
			}
			ok, ch := tbl.Initialized(db.ReadTxn())
			if ok != (len(pending) == 0) {
				t.Fatalf("round %d: %v: Initialized = %v with %d pending", round, log, ok, len(pending))
			}
			chans, closed = append(chans, ch), append(closed, ok)
			for i, c := range chans {
				closed[i] = closed[i] || ok
				if mdlClosed(c) != closed[i] {
					t.Fatalf("round %d: %v: channel %d closed: %v, want %v", round, log, i, mdlClosed(c), closed[i])
				}
			}
		}
		// Done with all: every channel closes.
		txn := db.WriteTxn(tbl)
		for _, done := range pending {
			done(txn)
		}
		_, err := txn.Commit()
		must(t, err)
		for i, c := range chans {
			if !mdlClosed(c) {
				t.Fatalf("round %d: every initializer done, channel %d open", round, i)
			}
		}
	}
}
