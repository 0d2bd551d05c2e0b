// Package txns hands out write transactions, so that package indirect
// holds one without importing strata.
package txns

import (
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

var byValue = strata.Index[int, int]{
	Name:       "value",
	FromObject: func(n int) index.KeySet { return index.KeySetOf(index.Int(n)) },
	FromKey:    index.Int,
	Unique:     true,
}

var (
	db    = strata.New()
	table = strata.MustNewTable(db, "numbers", byValue)
)

// Begin returns a write transaction.
func Begin() strata.WriteTxn { return db.WriteTxn(table) }
