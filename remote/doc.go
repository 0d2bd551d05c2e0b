// Package remote is the Go client of package httpapi: it reads the tables
// of a Strata database served over HTTP, follows their changes, and
// mirrors them into local tables.
//
//	c, err := remote.New("http://127.0.0.1:8080") // or "unix:///run/app/strata.sock"
//	hosts := remote.NewTable[*Host](c, "hosts")
//	for h, err := range hosts.Prefix(ctx, "name", "a") {
//		...
//	}
//
// # Reads
//
// A Table[Obj] decodes the server's objects into Obj with encoding/json.
// Its Get, List, Prefix, LowerBound, Range, All and Query return
// iter.Seq2[Obj, error] iterators over one snapshot, streamed: memory does
// not grow with the result. Read returns a result with the revision of
// its snapshot, and Wait is a blocking read: it returns when the result
// may have changed after a revision, as Consul's blocking queries do.
// And, In and Or combine key queries of several indexes as strata.And, In
// and Or do (ReadCombined and WaitCombined, with the revision; the
// Client's Combined and WaitCombined, untyped). The
// Client's untyped methods (Objects, Page, Object, Changes) serve tools
// that do not know the objects' types, such as a command line. Summary,
// Tables and Table describe the database; Cluster describes the
// replication cluster it belongs to, if it does (httpapi.ClusterStatus).
//
// # Changes
//
// Table.Changes follows a table's change stream: from revision 0 it lists
// the table (after a ChangeRelist, up to a ChangeBookmark), then yields
// each change. When the connection breaks or the server drops the stream,
// it reconnects with backoff and resumes from the last revision it
// yielded; when the server can no longer resume there (its ring of recent
// changes moved on, or it restarted: 410 Gone), it lists the table again,
// after another ChangeRelist.
//
// # Mirrors
//
// A Mirror keeps a local table equal to a remote one: a second process
// reads the first's state with its own snapshots, watch channels, change
// feeds and indexes, and waits for the local table's initializer to know
// it holds the whole remote table.
//
// # Errors
//
// Errors the server reports are *Error values holding its problem
// document; they match the error value the server met, so
// errors.Is(err, strata.ErrTableNotFound) holds for a table that is not
// there. A server that cannot be reached is ErrUnreachable.
package remote
