// Package flagged holds every way of dropping the error of a strata
// WriteTxn's Commit that commitcheck reports.
package flagged

import "github.com/strata-db/strata"

func statement(wtxn strata.WriteTxn) {
	wtxn.Commit() // want `the error of WriteTxn.Commit is not checked \(its results are discarded\): a failed commit publishes nothing`
}

func parenthesized(wtxn strata.WriteTxn) {
	(wtxn.Commit()) // want `its results are discarded`
}

func deferred(wtxn strata.WriteTxn) {
	defer wtxn.Commit() // want `a deferred call discards its results`
}

func deferredClosure(wtxn strata.WriteTxn) {
	defer func() {
		wtxn.Commit() // want `its results are discarded`
	}()
}

func goStatement(wtxn strata.WriteTxn) {
	go wtxn.Commit() // want `a go statement discards its results`
}

func blankError(wtxn strata.WriteTxn) strata.ReadTxn {
	rtxn, _ := wtxn.Commit() // want `assigned to _`
	return rtxn
}

func blankBoth(wtxn strata.WriteTxn) {
	_, _ = wtxn.Commit() // want `assigned to _`
}

func blankAssign(wtxn strata.WriteTxn) (rtxn strata.ReadTxn) {
	rtxn, _ = wtxn.Commit() // want `assigned to _`
	return rtxn
}

func blankVar(wtxn strata.WriteTxn) strata.ReadTxn {
	var rtxn, _ = wtxn.Commit() // want `assigned to _`
	return rtxn
}

func methodExpression(wtxn strata.WriteTxn) {
	strata.WriteTxn.Commit(wtxn) // want `its results are discarded`
}

func fromDB(db *strata.DB, t strata.TableMeta) {
	db.WriteTxn(t).Commit() // want `its results are discarded`
}

// Txn is an interface that embeds WriteTxn: it implements it.
type Txn interface {
	strata.WriteTxn
	Tables() []string
}

func embeddingInterface(txn Txn) {
	txn.Commit() // want `its results are discarded`
}

// wrapper embeds a WriteTxn, and promotes its Commit.
type wrapper struct {
	strata.WriteTxn
	note string
}

func embeddingStruct(w wrapper, pw *wrapper) {
	w.Commit()  // want `its results are discarded`
	pw.Commit() // want `its results are discarded`
}

// logged wraps a WriteTxn with a Commit of its own: it still implements
// WriteTxn, and its Commit's error means the same.
type logged struct {
	strata.WriteTxn
}

func (l *logged) Commit() (strata.ReadTxn, error) { return l.WriteTxn.Commit() }

func ownCommit(l *logged) {
	l.Commit() // want `its results are discarded`
}

func typeParameter[T strata.WriteTxn](txns ...T) {
	for _, t := range txns {
		t.Commit() // want `its results are discarded`
	}
}
