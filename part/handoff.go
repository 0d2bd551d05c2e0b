package part

// Handing a committed transaction's watch channels over.
//
// A database that publishes a tree only once its changes are durable may
// let the next transaction start from the committed tree (CommitOnly)
// before it is published. The transaction that built it then hands over
// what Notify would close (MoveRetired), and forgets it: the Txn is Reset
// for the next transaction. Once the tree is published, Retired.Notify
// closes those channels. If the tree is never published, the channels of
// the nodes the unpublished transactions created must close instead, and
// those of the published tree must stay open: Retired.DiscardSince and
// DiscardSince close the nodes created at or after the first unpublished
// transaction's Mark.

// Retired holds nodes of committed trees that committed transactions
// replaced or removed, moved out of their Txns (MoveRetired), until the
// trees that replace them are published (Notify) or thrown away
// (DiscardSince). The zero Retired is empty and ready to use.
type Retired struct{ nodes []*header }

// MoveRetired moves the nodes the transaction's committed changes replaced
// or removed into r, in addition to those r holds: a later Notify of the
// transaction closes nothing of them, r.Notify does.
func (t *Txn[T]) MoveRetired(r *Retired) {
	r.nodes = append(r.nodes, t.retired...)
	clear(t.retired)
	t.retired = t.retired[:0]
}

// Len returns the number of nodes r holds.
func (r *Retired) Len() int { return len(r.nodes) }

// Notify closes the watch channels of the nodes r holds, and empties r.
func (r *Retired) Notify() {
	for _, n := range r.nodes {
		n.seal()
	}
	clear(r.nodes)
	r.nodes = r.nodes[:0]
}

// DiscardSince closes the watch channels of the nodes r holds that were
// created at or after m (those of transactions whose trees are thrown
// away), leaves the others open, and empties r.
func (r *Retired) DiscardSince(m Mark) {
	for _, n := range r.nodes {
		if n.txn() >= uint64(m) {
			n.seal()
		}
	}
	clear(r.nodes)
	r.nodes = r.nodes[:0]
}

// Mark orders nodes by the transaction that created them: transaction ids
// only grow.
type Mark uint64

// NoMark is the Mark of a transaction that created no node: no node is at
// or after it.
const NoMark = Mark(noID)

// Mark returns the mark of the nodes the transaction created since Reset:
// each of them, and each node a transaction creates after this one's
// first, is at or after it, while every node of the tree the transaction
// was Reset to (a committed tree) is before it. NoMark if it created none.
func (t *Txn[T]) Mark() Mark { return Mark(t.first) }

// DiscardSince closes the watch channels of the nodes of tree created at
// or after m: tree is committed but will never be published, and readers
// of the transactions that built it may have taken channels on its new
// nodes. The nodes before m, which published trees share, stay open.
func DiscardSince[T any](tree Tree[T], m Mark) {
	if tree.root != nil && m != NoMark {
		sealSince(tree.root, uint64(m))
	}
}
