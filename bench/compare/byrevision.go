package main

// The revision index is opt-in in Strata (RevisionIndex, queried with
// ByRevision), so that tables that do not ask for it keep the write speed
// they had. This pair shows both halves of that:
//
//   - WriteTxn_100_ByRevision: WriteTxn_100 into a table that keeps the
//     revision index. Every statedb table keeps one (statedb's ByRevision
//     needs no option), so its figure is its WriteTxn_100, and the ratio
//     column is like for like: both maintain a revision index.
//   - WriteTxn_100_ByRevision_Baseline: WriteTxn_100 itself, without the
//     option, run round by round in turn with the first; the line under
//     the table gives what the index costs a write, per database.
//
// go-memdb has no revisions: n/a in both.
func byRevisionWorkloads() []Workload {
	return []Workload{
		{Name: "WriteTxn_100_ByRevision", Op: "as WriteTxn_100, the table keeping a revision index (statedb: always)",
			Group: "write", DB: writeBatch(100, Schema{ByRevision: true}, nil), NA: []string{"memdb"}},
		{Name: "WriteTxn_100_ByRevision_Baseline", Op: "WriteTxn_100, run in turn with WriteTxn_100_ByRevision",
			Group: "write", DB: writeBatch(100, Schema{}, nil), NA: []string{"memdb"}},
	}
}
