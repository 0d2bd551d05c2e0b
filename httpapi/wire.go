package httpapi

import (
	"encoding/json"

	"github.com/strata-db/strata"
)

// The JSON documents the API serves. The Go client (package remote) decodes
// them with these types; other clients can read their fields' names here.

// Summary is the document GET /v1/ serves: the database at a glance.
type Summary struct {
	// Instance names this handler's lifetime: a random string chosen by
	// New. A client that sees it change knows the server restarted, and
	// that revisions it holds may belong to another history.
	Instance string `json:"instance"`
	// Commits is the number of commits that changed the database
	// (strata.DB.Commits).
	Commits uint64 `json:"commits"`
	// Tables are the registered tables, in registration order.
	Tables []TableInfo `json:"tables"`
	// Streams describes the change streams served.
	Streams StreamStats `json:"streams"`
	// Cluster: the database is a member of a replication cluster, which
	// GET /v1/cluster describes (Options.Cluster is set).
	Cluster bool `json:"cluster,omitempty"`
}

// TableInfo describes one table, as GET /v1/tables and /v1/tables/{table}
// serve it.
type TableInfo struct {
	Name string `json:"name"`
	// ObjectType is the Go type of the table's objects.
	ObjectType string `json:"objectType"`
	// Objects is the number of objects.
	Objects int `json:"objects"`
	// Revision is the table's revision: that of its latest change.
	Revision strata.Revision `json:"revision"`
	// Indexes are the table's indexes, the primary first.
	Indexes []IndexInfo `json:"indexes"`
	// Initialized: every initializer of the table is done.
	Initialized bool `json:"initialized"`
	// PendingInitializers names the initializers not done yet.
	PendingInitializers []string `json:"pendingInitializers,omitempty"`
	// ChangeFeeds is the number of open change feeds, the handler's own
	// among them while it serves change streams of the table.
	ChangeFeeds int `json:"changeFeeds"`
	// Graveyard is the number of deletes kept for feeds that have not
	// delivered them.
	Graveyard int `json:"graveyard"`
	// LastWriter names the database handle whose transaction last changed
	// the table ("" if none has).
	LastWriter string `json:"lastWriter,omitempty"`
}

// IndexInfo describes an index.
type IndexInfo struct {
	Name    string `json:"name"`
	Primary bool   `json:"primary,omitempty"`
	Unique  bool   `json:"unique,omitempty"`
	// KeyType is the Go type of the index's query keys.
	KeyType string `json:"keyType"`
	// Text: the index takes keys typed as text. Raw keys (base64url,
	// raw=1) work on every index.
	Text bool `json:"text,omitempty"`
}

// Object is an object in a read's result.
type Object struct {
	// Revision is the revision the object was written at.
	Revision strata.Revision `json:"rev"`
	// Key is the object's primary key, as text (strata.AnyTable.KeyString).
	Key string `json:"key"`
	// Object is the object, encoded by encoding/json; null if it could
	// not be encoded.
	Object json.RawMessage `json:"obj"`
	// Error, if set, says why Object is null: encoding/json could not
	// encode the object.
	Error string `json:"error,omitempty"`
}

// Page is the document GET /v1/tables/{table}/objects serves: the objects
// a query selects, in the order of their keys in the query's index.
type Page struct {
	Table string `json:"table"`
	// Revision is the table's revision in the snapshot read: the waitRev
	// of a blocking read that waits for the result to change.
	Revision strata.Revision `json:"revision"`
	Objects  []Object        `json:"objects"`
	// Next, if set, is the cursor (after=) of the next page: the limit cut
	// the result short.
	Next string `json:"next,omitempty"`
}

// ObjectResult is the document GET /v1/tables/{table}/object serves: one
// object, and the table's revision in the snapshot read.
type ObjectResult struct {
	Table    string          `json:"table"`
	Revision strata.Revision `json:"revision"`
	Object
}

// CountResult is the document GET /v1/tables/{table}/count serves.
type CountResult struct {
	Table string `json:"table"`
	// Index is the index counted in, the primary's name if the query
	// named none.
	Index    string          `json:"index"`
	Revision strata.Revision `json:"revision"`
	// Count is how many objects the query matches: what /objects would
	// list, each object once.
	Count int `json:"count"`
}

// WriteResult is the document a write serves.
type WriteResult struct {
	// Revision is the table's revision after the write.
	Revision strata.Revision `json:"revision"`
	// Inserted and Deleted count the objects written.
	Inserted int `json:"inserted,omitempty"`
	Deleted  int `json:"deleted,omitempty"`
}

// EventKind is the kind of a change stream's event.
type EventKind string

const (
	// EventUpsert: the object was inserted or replaced at Revision.
	EventUpsert EventKind = "upsert"
	// EventDelete: the object was deleted at Revision.
	EventDelete EventKind = "delete"
	// EventBookmark: the stream has delivered every change up to
	// Revision; a client that reconnects resumes from it. The first
	// bookmark of a stream from revision 0 ends the listing of the
	// table's objects.
	EventBookmark EventKind = "bookmark"
	// EventProblem: the server ends the stream, for the reason Problem
	// gives (a consumer too slow to follow, a server shutting down).
	EventProblem EventKind = "problem"
)

// Event is one event of a change stream: a line of NDJSON, or the data of
// a Server-Sent Event whose event name is Kind and whose id is Revision.
type Event struct {
	Kind     EventKind       `json:"kind"`
	Revision strata.Revision `json:"rev,omitempty"`
	// Key is the object's primary key as text, for upserts and deletes.
	Key string `json:"key,omitempty"`
	// Object is the object, for upserts and deletes (a delete carries the
	// object as it was).
	Object json.RawMessage `json:"obj,omitempty"`
	// Error, if set, says why Object is missing: encoding/json could not
	// encode the object.
	Error string `json:"error,omitempty"`
	// Row is the object's TableRow, for an object that implements
	// strata.TableWritable (statedb's convention): the values of the
	// columns its type's TableHeader names, which the inspector shows.
	Row []string `json:"row,omitempty"`
	// Problem is the reason of an EventProblem.
	Problem *Problem `json:"problem,omitempty"`
}

// StreamStats counts the change streams a handler serves.
type StreamStats struct {
	// Active is the number of streams open now.
	Active int `json:"active"`
	// Served is the number of streams opened since New.
	Served uint64 `json:"served"`
	// Dropped is the number of streams ended because their consumer did
	// not keep up: a write blocked longer than Options.WriteTimeout, or
	// the table's ring of recent changes moved past what it had read.
	Dropped uint64 `json:"dropped"`
}

// Samples is the document GET /v1/samples serves: the sampler's history,
// oldest first, as columns of equal length.
type Samples struct {
	// IntervalMillis is the sampling interval.
	IntervalMillis int64 `json:"intervalMillis"`
	// Times are the samples' times, in Unix milliseconds.
	Times []int64 `json:"times"`
	// CommitsPerSec is the rate of commits over the interval before each
	// sample (0 for the first).
	CommitsPerSec []float64 `json:"commitsPerSec"`
	// Objects maps a table's name to its number of objects at each
	// sample (0 before the table was registered).
	Objects map[string][]int `json:"objects"`
}
