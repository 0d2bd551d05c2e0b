// Package indirect calls Commit on a WriteTxn it got from another
// package, without importing strata.
package indirect

import "commitchecktest/txns"

func dropped() {
	txns.Begin().Commit() // want `the error of WriteTxn.Commit is not checked \(its results are discarded\)`
}

func checked() error {
	_, err := txns.Begin().Commit()
	return err
}
