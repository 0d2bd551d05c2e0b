package strata

import (
	"fmt"
	"iter"
)

// And, In and Or for tools that do not know a table's object type: the
// untyped side of multiquery.go, for AnyTable.

// multiUntyped is what AnyTable's And, In and Or need of a table. Every
// typed table implements it (the value TableMeta.untyped returns), so
// the untypedTable interface need not grow.
type multiUntyped interface {
	anyMulti(txn ReadTxn, op string, qs []AnyQuery, watch bool) (iter.Seq[AnyObject], <-chan struct{}, error)
}

// And returns the objects every query of qs selects, as the package
// function And does: in primary-key order, each once. Each query must be
// a QueryList of an encoded key (Index "" is the primary index), without
// To or After. The error wraps ErrNoQueries, ErrIndexNotFound, or
// ErrInvalidQuery (another op, To or After set, an LPMIndex); a bad query
// changes nothing and reads nothing. The objects' Cursor is nil: And
// takes no cursor.
func (t AnyTable) And(txn ReadTxn, qs ...AnyQuery) (iter.Seq[AnyObject], error) {
	seq, _, err := t.multi(txn, "And", qs, false)
	return seq, err
}

// AndWatch is And with the channel AndWatch returns.
func (t AnyTable) AndWatch(txn ReadTxn, qs ...AnyQuery) (iter.Seq[AnyObject], <-chan struct{}, error) {
	return t.multi(txn, "And", qs, true)
}

// In returns the objects any query of qs selects, where every query is on
// one index, as the package function In does: in the index's order, each
// once. The queries are And's; the error is And's, or wraps
// ErrMixedIndexes for queries of different indexes.
func (t AnyTable) In(txn ReadTxn, qs ...AnyQuery) (iter.Seq[AnyObject], error) {
	seq, _, err := t.multi(txn, "In", qs, false)
	return seq, err
}

// InWatch is In with the channel InWatch returns.
func (t AnyTable) InWatch(txn ReadTxn, qs ...AnyQuery) (iter.Seq[AnyObject], <-chan struct{}, error) {
	return t.multi(txn, "In", qs, true)
}

// Or returns the objects any query of qs selects, on any indexes, as the
// package function Or does: in primary-key order, each once. The queries
// and the error are And's.
func (t AnyTable) Or(txn ReadTxn, qs ...AnyQuery) (iter.Seq[AnyObject], error) {
	seq, _, err := t.multi(txn, "Or", qs, false)
	return seq, err
}

// OrWatch is Or with the channel OrWatch returns.
func (t AnyTable) OrWatch(txn ReadTxn, qs ...AnyQuery) (iter.Seq[AnyObject], <-chan struct{}, error) {
	return t.multi(txn, "Or", qs, true)
}

func (t AnyTable) multi(txn ReadTxn, op string, qs []AnyQuery, watch bool) (iter.Seq[AnyObject], <-chan struct{}, error) {
	for _, q := range qs {
		switch {
		case q.Op != QueryList:
			return nil, nil, fmt.Errorf("table %q: %s: %w: %v, where only list selects by key", t.Meta.Name(), op, ErrInvalidQuery, q.Op)
		case q.To != nil || q.After != nil:
			return nil, nil, fmt.Errorf("table %q: %s: %w: To or After set", t.Meta.Name(), op, ErrInvalidQuery)
		}
	}
	u, ok := t.Meta.untyped().(multiUntyped)
	if !ok { // every table of this package is one
		return nil, nil, fmt.Errorf("table %q: %s: %w: the table does not combine queries", t.Meta.Name(), op, ErrInvalidQuery)
	}
	return u.anyMulti(txn, op, qs, watch)
}

func (t *table[Obj]) anyMulti(txn ReadTxn, op string, qs []AnyQuery, watch bool) (iter.Seq[AnyObject], <-chan struct{}, error) {
	typed := make([]Query[Obj], len(qs))
	for i, q := range qs {
		typed[i] = Query[Obj]{index: q.Index, key: sliceKey(q.Key)}
		if q.Index == "" {
			typed[i].index = t.indexes[0].name
		}
	}
	var seq iter.Seq2[Obj, Revision]
	var ch <-chan struct{}
	var err error
	switch op {
	case "And":
		seq, ch, err = and(txn, Table[Obj](t), typed, watch)
	case "In":
		seq, ch, err = inList(txn, Table[Obj](t), typed, watch)
	default:
		seq, ch, err = or(txn, Table[Obj](t), typed, watch)
	}
	if err != nil {
		return nil, nil, err
	}
	return func(yield func(AnyObject) bool) {
		for o, rev := range seq {
			if !yield(AnyObject{Object: o, Revision: rev}) {
				return
			}
		}
	}, ch, nil
}
