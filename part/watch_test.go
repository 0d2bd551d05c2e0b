package part

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// watchRec is a watch channel handed out by the tree, with what it covers:
// the exact key of a leaf, or every key under an inner node's prefix.
type watchRec struct {
	what   string
	ch     <-chan struct{}
	isLeaf bool
	key    []byte // the leaf's key, or the inner node's prefix
	// mustClose lists keys whose change must close the channel even though
	// it was handed out for them (GetWatch's key, PrefixWatch's prefix).
	mustKey    []byte
	mustPrefix bool
	// after is the step from which changes count: -1 for a channel taken
	// from the committed tree, which every change of the pending
	// transaction concerns; the step of InsertWatch for one taken from
	// the transaction, which only later changes concern.
	after int
	// pending: taken from the transaction, so a Reset discards it.
	pending bool
}

func (w *watchRec) covers(k []byte) bool {
	if w.isLeaf {
		return bytes.Equal(k, w.key)
	}
	return bytes.HasPrefix(k, w.key)
}

// TestWatchExact checks, against a model of which keys each commit changed,
// that a watch channel closes if and only if a key below the node it belongs
// to changed, and that the channels returned by GetWatch and PrefixWatch
// belong to nodes that cover the key or prefix asked for.
func TestWatchExact(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { testWatchExact(t, seed) })
	}
}

func testWatchExact(t *testing.T, seed uint64) {
	c := &randChooser{r: rand.New(rand.NewPCG(seed, 99))}
	tree := New[int]()
	txn := tree.Txn()
	var watches []*watchRec
	changed := map[string]int{} // the last step that changed each key
	committed := false          // txn committed since its last Reset
	model := map[string]int{}
	for step := range 3000 {
		switch op := c.intn(100); {
		case op < 24:
			k := genKey(c)
			txn.Insert(k, step)
			model[string(k)] = step
			changed[string(k)] = step
		case op < 30: // insert or modify, and watch the new value
			k := genKey(c)
			var ch <-chan struct{}
			if op < 27 {
				_, _, ch = txn.InsertWatch(k, step)
			} else {
				_, _, ch = txn.ModifyWatch(k, func(int, bool) int { return step })
			}
			model[string(k)] = step
			changed[string(k)] = step
			if isClosed(ch) {
				t.Fatalf("step %d: InsertWatch(%x) returned a closed channel", step, k)
			}
			if _, got, _ := txn.GetWatch(k); got != ch {
				t.Fatalf("step %d: InsertWatch(%x) returned another channel than the leaf's", step, k)
			}
			watches = append(watches, &watchRec{what: fmt.Sprintf("InsertWatch(%x)", k), ch: ch, isLeaf: true,
				key: k, mustKey: k, after: step, pending: true})
		case op < 45:
			k := genKey(c)
			if _, found := txn.Delete(k); found {
				changed[string(k)] = step
				delete(model, string(k))
			}
		case op < 48:
			p := genKey(c)
			if len(p) == 0 {
				p = []byte{'b'}
			}
			for k := range model {
				if bytes.HasPrefix([]byte(k), p) {
					changed[k] = step
					delete(model, k)
				}
			}
			txn.DeletePrefix(p)
		case op < 70: // watch a key
			k := genKey(c)
			_, ch, found := tree.GetWatch(k)
			w := &watchRec{what: fmt.Sprintf("GetWatch(%x)", k), ch: ch, mustKey: k, after: -1}
			if l := search(tree.root, k); l != nil {
				w.isLeaf, w.key = true, l.leafKey()
				if !found || l.watchChan() != ch {
					t.Fatalf("%s: not the leaf's channel", w.what)
				}
			} else {
				n := closestNode(tree.root, k)
				w.key = n.inner().prefix()
				if found || n.watchChan() != ch || !bytes.HasPrefix(k, w.key) {
					t.Fatalf("%s: not the closest node's channel", w.what)
				}
			}
			watches = append(watches, w)
		case op < 85: // watch a prefix
			p := genKey(c)
			_, ch := tree.PrefixWatch(p)
			_, n := prefixNode(tree.root, p)
			if n.watchChan() != ch {
				t.Fatalf("PrefixWatch(%x): not the expected node's channel", p)
			}
			w := &watchRec{what: fmt.Sprintf("PrefixWatch(%x)", p), ch: ch, mustKey: p, mustPrefix: true, after: -1}
			w.key = n.inner().prefix()
			watches = append(watches, w)
		case op < 90: // abort: Reset closes nothing, Discard the pending
			// Discard only before the transaction published a tree: it
			// would seal that tree's nodes.
			discard := !committed && c.intn(2) == 0
			committed = false
			if discard {
				txn.Discard(tree)
			} else {
				txn.Reset(tree)
			}
			kept := watches[:0]
			for _, w := range watches {
				if got, want := isClosed(w.ch), discard && w.pending; got != want {
					t.Fatalf("step %d: %s closed %v by an abort (discard %v), want %v", step, w.what, got, discard, want)
				}
				if !w.pending { // a dropped value's channel is done with
					kept = append(kept, w)
				}
			}
			watches = kept
			clear(changed)
			clear(model)
			for k, v := range tree.All() {
				model[string(k)] = v
			}
		default: // commit and check every outstanding watch
			tree = txn.Commit()
			committed = true
			kept := watches[:0]
			for _, w := range watches {
				w.pending = false
				want := false
				for k, at := range changed {
					if at <= w.after {
						continue
					}
					if w.covers([]byte(k)) {
						want = true
					}
					must := bytes.Equal([]byte(k), w.mustKey) ||
						(w.mustPrefix && bytes.HasPrefix([]byte(k), w.mustKey))
					if must && !w.covers([]byte(k)) {
						t.Fatalf("step %d: %s covers %x (leaf %v) which does not include changed key %x",
							step, w.what, w.key, w.isLeaf, k)
					}
				}
				if got := isClosed(w.ch); got != want {
					t.Fatalf("step %d: %s on node %x (leaf %v): closed=%v, want %v (changed: %d keys)",
						step, w.what, w.key, w.isLeaf, got, want, len(changed))
				}
				if !want {
					kept = append(kept, w)
				}
			}
			watches = kept
			clear(changed)
		}
	}
}

func TestRootOnlyWatch(t *testing.T) {
	tree := New[int](RootOnlyWatch())
	txn := tree.Txn()
	txn.Insert([]byte("a"), 1)
	txn.Insert([]byte("b"), 2)
	tree = txn.Commit()

	root := tree.RootWatch()
	_, getCh, _ := tree.GetWatch([]byte("a"))
	_, missCh, _ := tree.GetWatch([]byte("zzz"))
	_, prefixCh := tree.PrefixWatch([]byte("b"))
	for _, ch := range []<-chan struct{}{getCh, missCh, prefixCh} {
		if ch != root {
			t.Fatalf("watch is not the root's channel")
		}
	}
	// A commit without changes closes nothing.
	tree = txn.Commit()
	if isClosed(root) {
		t.Fatalf("root closed without a change")
	}
	txn.Insert([]byte("b"), 3)
	tree2 := txn.Commit()
	if !isClosed(root) {
		t.Fatalf("root not closed after a change")
	}
	// Only the root was recorded for closing.
	txn.Insert([]byte("c"), 4)
	if len(txn.retired) != 1 {
		t.Fatalf("retired %d nodes, want only the root", len(txn.retired))
	}
	txn.Commit()
	if isClosed(tree2.RootWatch()) != true {
		t.Fatalf("second root not closed")
	}
	_ = tree
}

// TestWatchOldSnapshot checks that asking an old, replaced node for its
// channel gives a closed channel, and that a node is closed once even when
// two transactions from the same tree both replace it.
func TestWatchOldSnapshot(t *testing.T) {
	base := New[int]()
	txn := base.Txn()
	txn.Insert([]byte("k"), 1)
	base = txn.Commit()

	t1, t2 := base.Txn(), base.Txn()
	t1.Insert([]byte("k"), 2)
	t2.Insert([]byte("k"), 3)
	t1.Commit()
	t2.Commit() // seals the same nodes again: must not close twice

	_, ch, _ := base.GetWatch([]byte("k"))
	if !isClosed(ch) {
		t.Fatalf("watch on a replaced leaf is open")
	}
	if !isClosed(base.RootWatch()) {
		t.Fatalf("watch on a replaced root is open")
	}
}

// TestWatchConcurrent has readers take watches on the latest tree while a
// writer commits, and checks under the race detector that a channel on a
// present key closes exactly when the key's value changes.
func TestWatchConcurrent(t *testing.T) {
	const keys, commits, readers = 8, 2000, 4
	var latest atomic.Pointer[Tree[int]]
	tree := New[int]()
	txn := tree.Txn()
	for i := range keys {
		txn.Insert([]byte{byte(i)}, 0)
	}
	tree = txn.Commit()
	latest.Store(&tree)

	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for !done.Load() {
				k := []byte{byte(rng.IntN(keys))}
				v, ch, _ := latest.Load().GetWatch(k)
				select {
				case <-ch:
					// Closed: the key must have a newer value now.
					if nv, _ := latest.Load().Get(k); nv == v {
						errs <- fmt.Errorf("key %x: channel closed but value still %d", k, v)
						return
					}
				case <-time.After(time.Millisecond):
				}
			}
		}()
	}
	for i := range commits {
		txn.Insert([]byte{byte(i % keys)}, i+1)
		tr := txn.CommitOnly()
		latest.Store(&tr)
		txn.Notify()
	}
	done.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Every key was written, so every channel taken at the start is closed.
	for i := range keys {
		if _, ch, _ := tree.GetWatch([]byte{byte(i)}); !isClosed(ch) {
			t.Fatalf("initial watch on key %d still open", i)
		}
	}
}

// TestTxnGetWatch checks that a channel taken from a transaction on a key it
// wrote closes at commit when the same transaction later replaces or deletes
// the key, and stays open when nothing else touches the key.
func TestTxnGetWatch(t *testing.T) {
	for _, then := range []string{"replace", "delete", "nothing"} {
		tree := New[int]()
		txn := tree.Txn()
		txn.Insert([]byte("k"), 1)
		txn.Insert([]byte("other"), 1)
		_, ch, found := txn.GetWatch([]byte("k"))
		if !found {
			t.Fatal("GetWatch on the transaction does not find its own write")
		}
		switch then {
		case "replace":
			txn.Insert([]byte("k"), 2)
		case "delete":
			txn.Delete([]byte("k"))
		}
		txn.Insert([]byte("other"), 2)
		tree = txn.Commit()
		if got, want := isClosed(ch), then != "nothing"; got != want {
			t.Fatalf("%s: closed = %v, want %v", then, got, want)
		}
		if then == "nothing" {
			txn = tree.Txn()
			txn.Insert([]byte("k"), 3)
			txn.Commit()
			if !isClosed(ch) {
				t.Fatalf("channel not closed when a later transaction replaced the key")
			}
		}
	}
}

// TestTxnDiscard: Discard closes the channels readers took on what the
// transaction created (through GetWatch on the transaction, and through
// snapshots, also of nodes written again after the snapshot), also after
// CommitOnly, and leaves open those of the tree it started from.
func TestTxnDiscard(t *testing.T) {
	for _, afterCommitOnly := range []bool{false, true} {
		base := New[int]()
		txn := base.Txn()
		for i := range 100 {
			txn.Insert([]byte(fmt.Sprintf("k%03d", i)), i)
		}
		base = txn.Commit()
		_, baseWatch, _ := base.GetWatch([]byte("k050"))     // not written below
		_, replacedWatch, _ := base.GetWatch([]byte("k010")) // written below

		txn = base.Txn()
		txn.Insert([]byte("new1"), 1)
		txn.Insert([]byte("k010"), -10)
		_, w1, _ := txn.GetWatch([]byte("new1"))
		snap := txn.Snapshot()
		_, w2, _ := snap.GetWatch([]byte("k010"))
		w3 := snap.RootWatch()
		txn.Insert([]byte("new2"), 2) // copies what the snapshot shares
		_, w4, _ := txn.GetWatch([]byte("new2"))
		if afterCommitOnly {
			txn.CommitOnly()
		}
		txn.Discard(base)
		for i, w := range []<-chan struct{}{w1, w2, w3, w4} {
			if !isClosed(w) {
				t.Errorf("after CommitOnly: %v: watch %d on what the discarded transaction created is open", afterCommitOnly, i+1)
			}
		}
		if isClosed(baseWatch) || isClosed(replacedWatch) {
			t.Errorf("after CommitOnly: %v: Discard closed a channel of the tree it started from", afterCommitOnly)
		}
		if txn.Len() != 100 {
			t.Errorf("after Discard the transaction has %d keys, want the base's 100", txn.Len())
		}
		if _, found := txn.Get([]byte("new1")); found {
			t.Error("after Discard the transaction has a discarded key")
		}
	}
}

// TestTxnDeleteIf: DeleteIf removes the key only if its condition says
// so, calls it only for a stored key, and changes nothing (no node copied,
// no channel closed) when it declines.
func TestTxnDeleteIf(t *testing.T) {
	txn := New[int]().Txn()
	for i := range 20 {
		txn.Insert([]byte{byte(i)}, i)
	}
	tree := txn.Commit()
	_, watch, _ := tree.GetWatch([]byte{5})

	txn = tree.Txn()
	calls := 0
	old, found, deleted := txn.DeleteIf([]byte{5}, func(v int) bool { calls++; return v != 5 })
	if old != 5 || !found || deleted || calls != 1 {
		t.Fatalf("declined DeleteIf = (%d, %v, %v) after %d calls, want (5, true, false) after 1", old, found, deleted, calls)
	}
	_, found, deleted = txn.DeleteIf([]byte{99}, func(int) bool { calls++; return true })
	if found || deleted || calls != 1 {
		t.Fatalf("DeleteIf of a missing key = (%v, %v) after %d calls", found, deleted, calls)
	}
	if got := txn.Commit(); got.root != tree.root || isClosed(watch) {
		t.Fatal("a declined DeleteIf changed the tree")
	}
	old, found, deleted = txn.DeleteIf([]byte{5}, func(v int) bool { return v == 5 })
	if old != 5 || !found || !deleted || txn.Len() != 19 {
		t.Fatalf("DeleteIf = (%d, %v, %v), %d keys left", old, found, deleted, txn.Len())
	}
	txn.Commit()
	if !isClosed(watch) {
		t.Fatal("the deleted key's channel is open after the commit")
	}
}

// TestTreeOneOpWatch: a one-operation write on a Tree commits, so it closes
// the channels of what it replaced and leaves the rest open.
func TestTreeOneOpWatch(t *testing.T) {
	tree := New[int]()
	_, _, tree = tree.Insert([]byte("a"), 1)
	_, _, tree = tree.Insert([]byte("b"), 1)
	_, a, _ := tree.GetWatch([]byte("a"))
	_, b, _ := tree.GetWatch([]byte("b"))
	_, _, next := tree.Insert([]byte("a"), 2)
	if !isClosed(a) || isClosed(b) {
		t.Fatalf("Tree.Insert of a: a closed %v, b closed %v; want true, false", isClosed(a), isClosed(b))
	}
	if v, _ := tree.Get([]byte("a")); v != 1 {
		t.Fatalf("the old tree reads a = %d, want 1", v)
	}
	_, b, _ = next.GetWatch([]byte("b"))
	_, _, next = next.Modify([]byte("b"), func(old int, found bool) int { return old + 10 })
	if v, _ := next.Get([]byte("b")); !isClosed(b) || v != 11 {
		t.Fatalf("Tree.Modify of b: closed %v, b = %d; want true, 11", isClosed(b), v)
	}
	_, b, _ = next.GetWatch([]byte("b"))
	if _, found, same := next.Delete([]byte("zz")); found || same.root != next.root {
		t.Fatalf("Tree.Delete of a missing key: found %v, new tree %v", found, same.root != next.root)
	}
	if old, found, gone := next.Delete([]byte("b")); !found || old != 11 || gone.Len() != 1 || !isClosed(b) {
		t.Fatalf("Tree.Delete(b) = %d, %v, Len %d, closed %v", old, found, gone.Len(), isClosed(b))
	}
}

// TestInsertWatchRootOnly: in a RootOnlyWatch tree, InsertWatch returns the
// root's channel, which a later transaction's change closes.
func TestInsertWatchRootOnly(t *testing.T) {
	txn := New[int](RootOnlyWatch()).Txn()
	_, _, ch := txn.InsertWatch([]byte("a"), 1)
	if ch != txn.root.watchChan() {
		t.Fatal("InsertWatch in a RootOnlyWatch tree is not the root's channel")
	}
	tree := txn.Commit()
	if isClosed(ch) || ch != tree.RootWatch() {
		t.Fatalf("after commit: closed %v, root's channel %v", isClosed(ch), ch == tree.RootWatch())
	}
	if _, _, tree = tree.Insert([]byte("b"), 2); tree.Len() != 2 {
		t.Fatalf("Len after the second insert = %d, want 2", tree.Len())
	}
	if !isClosed(ch) {
		t.Fatal("root channel from InsertWatch open after a later change")
	}
}

// TestInsertWatchDiscard: the channel of a value that a discarded
// transaction wrote closes, as the value will never be committed.
func TestInsertWatchDiscard(t *testing.T) {
	tree := New[int]()
	_, _, tree = tree.Insert([]byte("a"), 1)
	txn := tree.Txn()
	_, _, ins := txn.InsertWatch([]byte("b"), 2)
	_, _, mod := txn.ModifyWatch([]byte("a"), func(old int, _ bool) int { return old + 1 })
	txn.Discard(tree)
	if !isClosed(ins) || !isClosed(mod) {
		t.Fatalf("after Discard: InsertWatch's channel closed %v, ModifyWatch's %v", isClosed(ins), isClosed(mod))
	}
	if v, _ := tree.Get([]byte("a")); v != 1 {
		t.Fatalf("Discard changed the tree: a = %d", v)
	}
}
