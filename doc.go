// Package strata is a multi-version in-memory database of Go objects.
//
// # Tables and indexes
//
// A table holds immutable objects of one Go type (usually a pointer to a
// struct). Each table has a primary index, which gives every object exactly
// one key and identifies it, and any number of secondary indexes, unique or
// not, which give an object zero, one or several keys. Indexes are defined
// with Index, whose FromObject and FromKey encode keys with the
// order-preserving encoders of package index, so that key order is value
// order and range scans mean what they say.
//
//	var byID = strata.Index[*Node, uint64]{
//		Name:       "id",
//		FromObject: func(n *Node) index.KeySet { return index.KeySetOf(index.Uint64(n.ID)) },
//		FromKey:    index.Uint64,
//		Unique:     true,
//	}
//	nodes, err := strata.NewTable(db, "nodes", byID, byName)
//
// An index whose key type has a text form (integers, strings, bools,
// floats, byte slices, times, netip addresses and prefixes, and any type
// with encoding.TextUnmarshaler) takes keys typed as text and shows its
// keys in errors without more code; other indexes set Index.FromString
// and Index.ToString, built from package index's parsers and formatters.
//
// # Longest-prefix match
//
// An LPMIndex is a secondary index of network prefixes (netip.Prefix)
// read through the same Get and List: Get with Containing(addr) returns
// the object of the most specific prefix that contains the address, List
// every object whose prefix does, longest first; Query(p) selects exactly
// p, and Prefix with it p and its subnets. Objects give their prefixes
// with PrefixSetOf or NewPrefixSet; a prefix with host bits set is
// refused (ErrPrefixHostBits) rather than masked.
//
//	var byDst = strata.LPMIndex[*Route]{
//		Name:       "dst",
//		FromObject: func(r *Route) strata.PrefixSet { return strata.PrefixSetOf(r.Dst) },
//	}
//	route, _, found := routes.Get(txn, byDst.Containing(addr))
//
// # Snapshots and transactions
//
// Every table index is a persistent adaptive radix tree (package part). A
// change never modifies a tree; it builds a new one that shares all
// unchanged nodes with the old. The database publishes the trees of all
// tables as one immutable root, so:
//
//   - DB.ReadTxn returns a snapshot of every table: one atomic load, no
//     allocation, no lock. It never changes, however long it is kept.
//   - DB.WriteTxn locks the tables it will write, in one global order, so
//     that writers of overlapping tables never deadlock. Its writes are
//     visible to its own reads only, until Commit publishes all of them at
//     once with one atomic store. Abort throws them away.
//
// Readers never wait for writers, and writers only wait for writers of the
// same tables.
//
// # Objects are immutable
//
// An object that has been inserted may be read by any number of goroutines
// through any number of snapshots, without locks. It must therefore never be
// modified: to change an object, copy it, change the copy and insert the
// copy. Inserting the very pointer that is already stored is refused with
// ErrObjectMutated.
//
// # Watching
//
// The Watch variants of the read methods also return a channel that is
// closed when the result of the query may have changed in a newer snapshot:
// on one object (GetWatch), on a key prefix (PrefixWatch) or on the whole
// table (AllWatch). Channels are created only when asked for and cost
// nothing otherwise. A controller typically reads with a Watch method, acts,
// and waits for the channel before reading again.
//
// # Change feeds
//
// Table.Changes registers a feed in a write transaction; each Next returns
// the objects inserted, replaced or deleted since the feed last delivered,
// in revision order, each once in its newest state, and a channel that
// closes on the next change (ChangeIterator says exactly what and when).
// A feed opened WithCreated also tells created objects from replaced ones,
// and flags the deletes of objects it never delivered (Change.Created);
// feeds that do not ask for it do not pay for it. See
// ExampleChangeIterator.
//
// # Deleting many objects
//
// RWTable.DeletePrefix, DeleteRange and DeleteMatches delete, in one call
// inside a write transaction, every object that Prefix, Range or List
// would return for the same queries, and return how many. Each deleted
// object takes its own revision and leaves every secondary index, and
// watch channels and change feeds see the deletes as they see single
// ones; on the primary index DeletePrefix cuts the objects out of the tree
// in one operation. See ExampleRWTable_DeletePrefix and
// ExampleRWTable_DeleteMatches.
//
// # Objects that expire
//
// An ExpiryIndex among a table's secondary indexes keys its objects by the
// time they expire at (the zero time: never). ExpireBefore deletes the
// objects due at a given time, in write transactions of a given size,
// each committed; an Expirer does it as they come due, in one goroutine
// per database that sleeps until the soonest expiry. The deletes are
// ordinary ones, which watch channels, change feeds and journals see. A
// write of an object already expired fails with ErrExpired; loads
// (Restore, ApplyWrite) take objects whatever their expiry. See
// ExampleExpiryIndex, ExampleExpirer and docs/expiry.md.
//
// # Objects by revision
//
// A table registered with RevisionIndex among its secondary indexes also
// keeps its objects by the revision they were written at:
// LowerBound(txn, ByRevision(rev)) returns those written at rev or later,
// oldest first. The index is opt-in, so that tables without it pay nothing
// for it; querying ByRevision on such a table panics, as a query of any
// index the table does not have does. See ExampleByRevision.
//
// # Handles and dumps
//
// DB.NewHandle returns the same database under another name, which the
// metrics of its write transactions carry and TableMeta.LastWriter
// reports: give each module of a program its own (ExampleDB_NewHandle).
// WriteJSON writes the tables of a snapshot as one JSON object, streamed,
// for debugging dumps (ExampleWriteJSON).
//
// # Tables of unknown type
//
// Tools that serve any table (an HTTP API, a command line, debug dumps)
// use AnyTable: DB.AnyTable finds a table by name, Indexes describes its
// indexes, and Read returns the objects of a query on any index (all, one
// key, a prefix, a lower bound, a range) as values of type any, with
// cursors to resume a large result page by page. Keys go in as text,
// through ParseKey and each index's FromString, or raw.
//
// # Errors
//
// Errors are values declared in errors.go, wrapped with the table and index
// they concern; test them with errors.Is. A write that returns an error
// changes nothing. Programming errors that no caller can handle, such as
// querying an index a table does not have, or using a table with another
// database's transaction, panic with a message that says so.
package strata
