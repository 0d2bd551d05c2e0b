// Package httpapi serves a Strata database over HTTP: its tables, queries
// on any index, blocking reads, change streams, a JSON dump, snapshot
// downloads and, opt-in, a live web inspector. It reads tables it does not
// know the type of (strata.AnyTable), so an application mounts it in a
// few lines:
//
//	h := httpapi.New(db, httpapi.Options{UI: true})
//	defer h.Close()
//	mux.Handle("/", h)
//
// Package remote is its Go client.
//
// # Endpoints
//
//	GET    /v1/                          Summary: instance, commits, tables, streams, cluster
//	GET    /v1/tables                    []TableInfo
//	GET    /v1/tables/{table}            TableInfo
//	GET    /v1/tables/{table}/objects    Page: a query's objects (below)
//	GET    /v1/tables/{table}/object     ObjectResult: the first object with key=
//	GET    /v1/tables/{table}/count      CountResult: how many objects a query matches
//	GET    /v1/tables/{table}/and        Page: the objects every q= selects (below)
//	GET    /v1/tables/{table}/in         Page: the objects any q= of one index selects
//	GET    /v1/tables/{table}/or         Page: the objects any q= selects
//	POST   /v1/tables/{table}/objects    insert the body's JSON objects (NDJSON)
//	DELETE /v1/tables/{table}/object     delete the object with primary key=
//	DELETE /v1/tables/{table}/and        delete what GET would return (also /in, /or)
//	GET    /v1/tables/{table}/changes    the change stream (below)
//	GET    /v1/dump[?table=T...]         strata.WriteJSON of one snapshot
//	GET    /v1/snapshot                  Options.Snapshot of one snapshot
//	GET    /v1/cluster                   ClusterStatus: members, leader, indexes (with Options.Cluster)
//	GET    /v1/samples                   Samples, the sampler's history (with UI)
//	GET    /ui/                          the web inspector (with UI)
//
// # Queries
//
// The objects endpoint reads one index (index=, the primary by default):
// every object, or those whose key is key=, starts with prefix=, is at
// least lowerbound=, or is at least from= and below to=. Keys are text,
// read by the index's FromString (or the default of its key type), or
// raw, in base64url, with raw=1. limit=N cuts the result to N objects and
// sets the Page's Next, the cursor that after= takes to read the next
// page; cursors stay valid across snapshots. Every response names the
// table's revision in the snapshot it read, in the document and in the
// Strata-Revision header.
//
// /and, /in and /or combine key queries of several indexes, as
// strata.And, In and Or do: each q=INDEX=KEY (repeated; q=KEY is a key of
// the primary index) selects the objects whose key in INDEX is KEY. /and
// returns the objects every query selects, /or those any selects, both in
// primary-key order; /in those any selects where every query is on one
// index, in that index's order; each object once. Keys are text, or
// base64url with raw=1. The result is one Page, without cursors (limit
// and after are refused). No q= is strata.ErrNoQueries, a query of an
// LPM index strata.ErrInvalidQuery, /in's queries of several indexes
// strata.ErrMixedIndexes (each 400); an unknown index is
// strata.ErrIndexNotFound (404), as on /objects. DELETE on /and, /in or
// /or deletes what GET returns, in one write transaction that reads the
// query itself (strata.AnyTable.DeleteEach), and answers a WriteResult
// with the count; it takes q= and raw=, not waitRev=.
//
// # Blocking reads
//
// With waitRev=R (and wait=30s, at most Options.MaxWait), a read of the
// objects, of one object, of a count or of /and, /in or /or returns at
// once if the table's revision is not R; otherwise it waits on the
// query's own watch channel (one for a combined query), and returns the
// newer result once the result may have changed, or the same one when the
// wait runs out. A client loops: read, then read again with waitRev set
// to the revision of what it read. A revision lower than the client's
// means the server restarted: start again.
//
// # Change streams
//
// GET /v1/tables/{table}/changes?from=R streams the table's changes as
// NDJSON (one Event per line), or as Server-Sent Events when the client
// accepts text/event-stream (or format=sse): event names are the kinds
// (upsert, delete, bookmark, problem) and ids the revisions, so that a
// browser's EventSource resumes by itself through Last-Event-ID.
//
// From 0, the stream first lists the table's objects as upserts, then a
// bookmark at the snapshot's revision; then every change after it. From R
// it sends every change after R, each object once or more in revision
// order. Bookmarks follow the first catch-up and come every
// Options.BookmarkInterval; a client resumes from the revision of the last
// change or bookmark it read.
//
// An upsert or delete of an object that implements strata.TableWritable
// carries its TableRow too (Event.Row), as the inspector shows it.
//
// One change feed per table serves all its streams: the handler encodes
// each change once into a ring of the table's recent changes (at most
// Options.RingSize changes and Options.RingBytes bytes), which lives while
// streams of the table are open and Options.RingRetention after. A stream
// from a revision the ring still covers is served; an older one, or one
// newer than the table's (another database, or this one before a
// restart), is refused with 410 Gone (ErrRevisionGone), and the client
// lists again from 0. (So a client that read a table and then streams
// from the revision it read is served only if a ring of the table was
// running before its read; to list and follow without a gap, stream from
// 0.) A stream whose consumer falls behind the ring, or
// does not take a write within Options.WriteTimeout, is ended with a
// problem event (ErrSlowConsumer) and counted (StreamStats.Dropped); its
// client reconnects from where it stopped. A stream ends, and releases its
// hold on the ring, when its client goes away.
//
// # Errors
//
// Every error is an RFC 9457 problem document (application/problem+json)
// whose error member names the error value: strata.ErrTableNotFound,
// strata.ErrIndexNotFound, index.ErrParseKey, ErrRevisionGone and the
// others of this package (see ProblemOf). A query string the handler
// cannot parse (a malformed percent-escape such as key=h0%zz, or a
// semicolon) is refused at every endpoint, before anything is read or
// written, with 400 (ErrBadRequest) naming the parameter: the request is
// never served as if the parameter were absent.
//
// # Security
//
// The handler never owns the listener: the application chooses who can
// reach it. Serve it on a unix socket made 0600 (or in a directory only
// the operator's group may enter), on a loopback address, or behind TLS
// with client certificates (tls.Config's ClientAuth). Options.Authorize
// then decides per request: by default reads and watches are allowed,
// snapshots and writes refused. Objects are served as their JSON: a table
// holding secrets is served as it is, so restrict access, or keep such
// fields out of JSON (`json:"-"`).
//
// An http.Server's WriteTimeout, if set, must exceed Options.MaxWait for
// blocking reads to finish; change streams move their own write deadline
// forward with each write (Options.WriteTimeout).
//
// # The inspector
//
// With Options.UI, /ui/ serves a web inspector: an overview of the
// tables with plots of commits per second and objects per table; a
// table's objects, a page at a time, as a table of their fields (the
// columns of the strata command's table output), or of their TableHeader
// and TableRow if they implement strata.TableWritable, each row opening on the
// object's JSON, with a filter on any index (exact key, prefix, at least,
// range) whose keys are text parsed as the query parameters' are, the
// number of objects the filter matches (as /count counts them, or
// "cannot count"), and live updates from the change stream; and one
// object, watched with blocking reads. A filter the API refuses is shown
// as the API's problem, on the page, under the problem's status.
//
// The inspector is read-only. Its pages show object contents only as
// text, and are served with a Content-Security-Policy that allows no
// inline script and no other origin.
package httpapi
