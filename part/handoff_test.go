package part

import "testing"

// TestHandOff: a transaction that hands its retired nodes over closes
// nothing itself; Notify closes them. If the trees built on a committed
// but unpublished one are thrown away, DiscardSince closes the channels
// of the nodes created from the first unpublished transaction on, and
// leaves those of the published tree open.
func TestHandOff(t *testing.T) {
	txn := New[int]().Txn()
	for i := range 100 {
		txn.Insert([]byte{byte(i), 'k'}, i)
	}
	published := txn.Commit()
	_, watchA, _ := published.GetWatch([]byte{1, 'k'})
	_, watchB, _ := published.GetWatch([]byte{2, 'k'})
	root := published.RootWatch()

	// t1 replaces key 1 and inserts key 200; its tree is committed, not
	// published.
	t1 := published.Txn()
	t1.Insert([]byte{1, 'k'}, -1)
	t1.Insert([]byte{200, 'k'}, 200)
	_, watchNew, _ := t1.GetWatch([]byte{200, 'k'})
	mark := t1.Mark()
	if mark == NoMark {
		t.Fatal("a transaction that created nodes has no mark")
	}
	pending := t1.CommitOnly()
	var r1 Retired
	t1.MoveRetired(&r1)
	t1.Notify()
	if isClosed(watchA) || isClosed(root) {
		t.Fatal("Notify after MoveRetired closed a handed-over channel")
	}
	if r1.Len() == 0 {
		t.Fatal("nothing was handed over")
	}

	// t2 builds on the pending tree: replaces key 200 (t1's) and key 2
	// (the published tree's).
	t2 := pending.Txn()
	t2.Insert([]byte{200, 'k'}, -200)
	t2.Insert([]byte{2, 'k'}, -2)
	thrown := t2.CommitOnly()
	var r2 Retired
	t2.MoveRetired(&r2)

	// Both are thrown away.
	r1.DiscardSince(mark)
	r2.DiscardSince(mark)
	DiscardSince(thrown, mark)
	if isClosed(watchA) || isClosed(watchB) || isClosed(root) {
		t.Fatal("throwing unpublished trees away closed a channel of the published tree")
	}
	if !isClosed(watchNew) {
		t.Fatal("the channel of a never-published node is open")
	}
	if r1.Len() != 0 || r2.Len() != 0 {
		t.Fatal("DiscardSince left nodes in a Retired")
	}

	// Published instead, Notify closes what was replaced.
	t3 := published.Txn()
	t3.Insert([]byte{1, 'k'}, -1)
	t3.CommitOnly()
	var r3 Retired
	t3.MoveRetired(&r3)
	if isClosed(watchA) {
		t.Fatal("closed before Notify")
	}
	r3.Notify()
	if !isClosed(watchA) || !isClosed(root) {
		t.Fatal("Notify left a replaced node's channel open")
	}
	if isClosed(watchB) {
		t.Fatal("Notify closed the channel of a node that was not replaced")
	}
}
