package strata

import (
	"fmt"
	"slices"
)

// initState is a table's set of pending initializers in one snapshot. It is
// never changed once published; a change builds a new one.
type initState struct {
	pending []initializer
	// done is closed when pending becomes empty. While pending is empty it
	// is closed already; a first initializer gets a new, open channel.
	done chan struct{}
}

type initializer struct {
	name string
	id   uint64 // tells apart initializers of the same name
}

// initialized is the state of a table that no initializer ever waited for.
var initialized = &initState{done: closedChan}

var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

func (t *table[Obj]) Initialized(txn ReadTxn) (bool, <-chan struct{}) {
	s := t.read(txn).init
	return len(s.pending) == 0, s.done
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
	tt, err := t.writeState(txn)
	if err != nil {
		panic(fmt.Sprintf("strata: RegisterInitializer(%q): %v", name, err))
	}
	cur := tt.initState()
	t.lastInitID++
	id := t.lastInitID
	next := &initState{pending: append(slices.Clip(cur.pending), initializer{name, id}), done: cur.done}
	if len(cur.pending) == 0 {
		next.done = make(chan struct{})
	}
	tt.init = next
	tt.dirty = true
	return func(txn WriteTxn) {
		tt, err := t.writeState(txn)
		if err != nil {
			panic(fmt.Sprintf("strata: initializer %q done: %v", name, err))
		}
		cur := tt.initState()
		i := slices.IndexFunc(cur.pending, func(p initializer) bool { return p.id == id })
		if i < 0 {
			return
		}
		tt.init = &initState{pending: slices.Delete(slices.Clone(cur.pending), i, i+1), done: cur.done}
		tt.dirty = true
	}
}
