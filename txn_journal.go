package strata

// A write transaction's journal record: the tables a commit must journal,
// writing their changes into one batch, and committing it, with a panic of
// the journal turned into the commit's error.

import "fmt"

// firstJournaled returns the position in w.locked of the first table whose
// changes the journal records, or -1 if there is none.
func (w *txnCore) firstJournaled() int {
	for i := range w.lockedTables {
		if lt := &w.lockedTables[i]; lt.state != nil && lt.txn.journaled() {
			return i
		}
	}
	return -1
}

// journalPanic is the error writeRecord returns for a panic in the
// journal: commit cleans up as for any error, and Commit panics again with
// value.
type journalPanic struct{ value any }

func (p *journalPanic) Error() string { return fmt.Sprintf("journal panicked: %v", p.value) }

// writeRecord writes the changes of the journaled tables, the first of
// which is w.locked[first], into a new record of the database's journal,
// and returns it unwritten. It runs before the root is published and
// outside db.mu, so commits of other tables can share the journal's
// writes (group commit). The journal is code of the persistence layer
// and of its user (codecs): a panic in it is recovered into a
// *journalPanic, so that the transaction is aborted and its tables
// unlocked before the panic goes on (TestJournalPanic).
func (w *txnCore) writeRecord(first int) (b JournalBatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			if b != nil {
				b.Discard()
			}
			b, err = nil, &journalPanic{value: r}
		}
	}()
	b = w.db.journal.Begin()
	for i := first; i < len(w.lockedTables); i++ {
		lt := &w.lockedTables[i]
		if lt.state == nil || !lt.txn.journaled() {
			continue
		}
		if err := lt.txn.writeJournal(b); err != nil {
			b.Discard()
			return nil, fmt.Errorf("table %q: journal: %w", lt.meta.name, err)
		}
	}
	return b, nil
}

// commitRecord writes the record b (JournalBatch.Commit), recovering a
// panic of the journal as writeRecord does.
func commitRecord(b JournalBatch) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &journalPanic{value: r}
		}
	}()
	if err := b.Commit(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}
