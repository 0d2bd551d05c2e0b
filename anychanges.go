package strata

import "iter"

// AnyChangeIterator is a change feed of a table of unknown type, opened by
// AnyTable.Changes. It behaves exactly as the typed ChangeIterator it
// wraps (see ChangeIterator for what Next delivers, and when), with each
// Change's Object of the table's type (AnyTable.ObjectType) held in an any.
//
// An AnyChangeIterator is not safe for concurrent use.
type AnyChangeIterator interface {
	// Next returns the changes up to the committed snapshot txn holds,
	// and a watch channel; a closed feed returns a nil channel.
	Next(txn ReadTxn) (changes iter.Seq2[Change[any], Revision], watch <-chan struct{})
	// Close releases the feed's hold on the change log.
	Close()
}

// Changes registers a change feed on the table in txn, as the typed
// Table.Changes does, for tools that serve tables they do not know the
// type of (an HTTP change stream, a script's watch command). txn must have
// locked the table; the error wraps ErrTableNotLockedForWriting otherwise.
func (t AnyTable) Changes(txn WriteTxn, opts ...FeedOption) (AnyChangeIterator, error) {
	return t.Meta.untyped().anyChanges(txn, opts)
}

func (t *table[Obj]) anyChanges(txn WriteTxn, opts []FeedOption) (AnyChangeIterator, error) {
	it, err := t.Changes(txn, opts...)
	if err != nil {
		return nil, err
	}
	return anyChangeIterator[Obj]{it}, nil
}

// anyChangeIterator boxes the changes of a typed feed.
type anyChangeIterator[Obj any] struct{ it ChangeIterator[Obj] }

func (a anyChangeIterator[Obj]) Next(txn ReadTxn) (iter.Seq2[Change[any], Revision], <-chan struct{}) {
	changes, watch := a.it.Next(txn)
	return func(yield func(Change[any], Revision) bool) {
		for c, rev := range changes {
			ac := Change[any]{Object: c.Object, Revision: c.Revision, Deleted: c.Deleted, Created: c.Created}
			if !yield(ac, rev) {
				return
			}
		}
	}, watch
}

func (a anyChangeIterator[Obj]) Close() { a.it.Close() }
