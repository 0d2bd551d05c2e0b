package strata

// Commits returns the number of write transactions that have committed
// changes to the database since New: those that published a new snapshot.
// A commit that changed nothing is not counted. Tools sample it to show
// commits per second; it costs a commit nothing beyond an increment under
// a lock the commit holds anyway, and a caller one uncontended lock.
func (db *DB) Commits() uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.commits
}
