package strata

// Table initializers: RegisterInitializer, Initialized, and the set of a
// table's pending initializers in a snapshot (initializers).

import (
	"fmt"
	"slices"
)

// initializers is a table's set of pending initializers in one snapshot. It is
// never changed once published; a change builds a new one.
//
// Invariant: in a published state, done is closed exactly when pending is
// empty. A transaction keeps the channel of the state it began from while
// the table stays not initialized (so that the channel handed out then
// closes when the table is initialized), makes a new one when a first
// initializer is registered, and closes its channel when it commits with
// none pending, or aborts after making it (readers through the
// transaction may hold it).
type initializers struct {
	pending []initializer
	done    chan struct{}
}

type initializer struct {
	name string
	id   uint64 // tells apart initializers of the same name
}

// initialized is the state of a table that no initializer ever waited for.
var initialized = &initializers{done: closedChan}

var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

func (t *table[Obj]) Initialized(txn ReadTxn) (bool, <-chan struct{}) {
	s := t.read(txn).init
	if len(s.pending) == 0 {
		// Through a write transaction that marked the last one done, done
		// is the channel of the state it began from, which stays open if
		// the transaction aborts.
		return true, closedChan
	}
	return false, s.done
}

func (t *table[Obj]) PendingInitializers(txn ReadTxn) []string {
	s := t.read(txn).init
	names := make([]string, len(s.pending))
	for i, p := range s.pending {
		names[i] = p.name
	}
	return names
}

func (t *table[Obj]) RegisterInitializer(txn WriteTxn, name string) func(WriteTxn) {
	tt, err := t.txnFor(txn)
	if err != nil {
		panic(fmt.Sprintf("strata: RegisterInitializer(%q): %v", name, err))
	}
	cur := tt.initializers()
	t.lastInitID++
	id := t.lastInitID
	next := &initializers{pending: append(slices.Clip(cur.pending), initializer{name, id}), done: cur.done}
	if isClosed(cur.done) {
		next.done = make(chan struct{})
	}
	tt.cur.init = next
	tt.cur.dirty = true
	return func(txn WriteTxn) {
		tt, err := t.txnFor(txn)
		if err != nil {
			panic(fmt.Sprintf("strata: initializer %q done: %v", name, err))
		}
		cur := tt.initializers()
		i := slices.IndexFunc(cur.pending, func(p initializer) bool { return p.id == id })
		if i < 0 {
			return
		}
		tt.cur.init = &initializers{pending: slices.Delete(slices.Clone(cur.pending), i, i+1), done: cur.done}
		tt.cur.dirty = true
	}
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// committed closes the channel of a committed state whose initializers are
// all done. Only the writer of the table closes these channels, under the
// table lock.
func (s *initializers) committed() {
	if len(s.pending) == 0 && !isClosed(s.done) {
		close(s.done)
	}
}

// aborted closes the channel of a state that an aborted transaction made,
// if the transaction made it: no committed state has it, and readers
// through the transaction may wait on it. base is the state the
// transaction began from; its channel stays.
func (s *initializers) aborted(base *initializers) {
	if s.done != base.done && !isClosed(s.done) {
		close(s.done)
	}
}
