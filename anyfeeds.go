package strata

// FeedStats are the figures of a table's change feeds in one snapshot, for
// tools that describe tables (a script's db command, an inspector).
type FeedStats struct {
	// Feeds is the number of open change feeds of the table (now, not as
	// of the snapshot: feeds are not part of snapshots).
	Feeds int
	// Lag is how many revisions the slowest open feed is behind the
	// snapshot's revision of the table.
	Lag uint64
	// Graveyard is the number of deleted objects the table keeps, as of
	// the snapshot, for open feeds that have not delivered them yet.
	Graveyard int
}

// FeedStats returns the figures of the table's change feeds as of the
// committed snapshot txn holds (a write transaction's own writes are not
// counted). A table without feeds has zero FeedStats.
func (t AnyTable) FeedStats(txn ReadTxn) FeedStats {
	m := t.Meta.tableMeta()
	h := txn.committed().tableState(m)
	if h == nil {
		return FeedStats{}
	}
	_, deletes := t.Meta.stateStats(h)
	live, lag, graveyard := m.feeds.stats(h.revision, deletes)
	return FeedStats{Feeds: live, Lag: lag, Graveyard: graveyard}
}
