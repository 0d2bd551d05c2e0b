package strata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"

	"github.com/strata-db/strata/internal/wirejson"
)

// WriteJSON writes the tables of the snapshot txn to w as one JSON object
// that maps each table's name to the array of its objects, in primary key
// order, each object encoded by encoding/json:
//
//	{
//	  "hosts": [
//	    {"Name":"a1","Zone":"eu"},
//	    {"Name":"b1","Zone":"us"}
//	  ],
//	  "zones": []
//	}
//
// With no tables named it writes every table of the snapshot, in
// registration order; otherwise the named ones, in the order given. It streams: memory use does
// not grow with the tables, and a write transaction's own uncommitted
// writes are included. This is statedb's ReadTxn.WriteJSON, for debugging
// dumps.
//
// A table name that is not registered fails with an error wrapping
// ErrTableNotFound before anything is written. An object that encoding/json
// cannot encode, or a write to w that fails, stops the dump with an error
// naming the table (and the object's revision); what was written before
// stays written.
func WriteJSON(w io.Writer, txn ReadTxn, tables ...TableName) error {
	root := txn.committed()
	var metas []TableMeta
	if len(tables) == 0 {
		// The tables of the snapshot: those registered before it.
		metas = root.db.Tables()
		metas = metas[:min(len(metas), root.n)]
	} else {
		for _, name := range tables {
			t, err := root.db.AnyTable(name)
			if err != nil {
				return err
			}
			metas = append(metas, t.Meta)
		}
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("{")
	for i, m := range metas {
		if i > 0 {
			bw.WriteString(",")
		}
		if err := writeTableJSON(bw, txn, AnyTable{Meta: m}); err != nil {
			return err
		}
	}
	if len(metas) > 0 {
		bw.WriteString("\n")
	}
	bw.WriteString("}\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// writeTableJSON writes one table's member of WriteJSON's object.
func writeTableJSON(bw *bufio.Writer, txn ReadTxn, t AnyTable) error {
	name, _ := json.Marshal(t.Name()) // a table name is plain ASCII
	bw.WriteString("\n  ")
	bw.Write(name)
	bw.WriteString(": [")
	enc := wirejson.NewEncoder()
	n := 0
	for obj, rev := range t.All(txn) {
		data, err := enc.Encode(obj)
		if err != nil {
			return fmt.Errorf("table %q: object at revision %d: %w", t.Name(), rev, err)
		}
		if n > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		// bufio keeps the first error of w: it stops a long dump here.
		if _, err := bw.Write(data); err != nil {
			return fmt.Errorf("writing JSON: %w", err)
		}
		n++
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	bw.WriteString("]")
	return nil
}

// WriteJSON is the function WriteJSON with r (ReadTxn's method).
func (r *dbRoot) WriteJSON(w io.Writer, tables ...TableName) error { return WriteJSON(w, r, tables...) }

// WriteJSON is the function WriteJSON with the transaction (ReadTxn's
// method): its own uncommitted writes are included.
func (h *txnRef) WriteJSON(w io.Writer, tables ...TableName) error { return WriteJSON(w, h, tables...) }
