// Package clean holds uses of Commit that commitcheck must not report:
// checked errors, and Commit methods of other types.
package clean

import (
	"errors"
	"fmt"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/part"
)

func checked(wtxn strata.WriteTxn) (strata.ReadTxn, error) {
	rtxn, err := wtxn.Commit()
	if err != nil {
		return nil, err
	}
	return rtxn, nil
}

func checkedBlankSnapshot(wtxn strata.WriteTxn) error {
	_, err := wtxn.Commit()
	return err
}

func checkedInIf(wtxn strata.WriteTxn) error {
	if _, err := wtxn.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

func returned(wtxn strata.WriteTxn) (strata.ReadTxn, error) {
	return wtxn.Commit()
}

func must(rtxn strata.ReadTxn, err error) strata.ReadTxn {
	if err != nil {
		panic(err)
	}
	return rtxn
}

func passedOn(wtxn strata.WriteTxn) strata.ReadTxn {
	return must(wtxn.Commit())
}

func deferredChecked(wtxn strata.WriteTxn) (err error) {
	defer func() {
		_, cerr := wtxn.Commit()
		err = errors.Join(err, cerr)
	}()
	return nil
}

func abort(wtxn strata.WriteTxn) {
	defer wtxn.Abort()
	wtxn.Abort()
}

// A method value is not followed to its calls.
func methodValue(wtxn strata.WriteTxn) func() (strata.ReadTxn, error) {
	commit := wtxn.Commit
	return commit
}

// part.Txn's Commit and CommitOnly return a tree and no error.
func partTxn() part.Tree[int] {
	txn := part.New[int]().Txn()
	txn.Insert([]byte("a"), 1)
	txn.Commit()
	txn.CommitOnly()
	return txn.Commit()
}

// A Commit of another type, even with the same signature as WriteTxn's,
// is not WriteTxn's.
type lookalike struct{}

func (lookalike) Commit() (strata.ReadTxn, error) { return nil, nil }

type committer interface{ Commit() error }

type batch struct{}

func (batch) Commit() error { return nil }

func otherCommits(l lookalike, c committer, b batch, jb strata.JournalBatch) {
	l.Commit()
	c.Commit()
	b.Commit()
	jb.Commit()
	defer b.Commit()
}

// A field named Commit is not a method.
type withField struct {
	Commit func() (strata.ReadTxn, error)
}

func field(w withField) {
	w.Commit()
}
