package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// Errors of the API itself. Every error a request meets is served as an
// RFC 9457 problem (Problem, application/problem+json) whose Error member
// names the error value: one of these, or one of package strata's or
// index's.
var (
	// ErrBadRequest: a query parameter or a request body is malformed (a
	// limit that is not a number, a raw key that is not base64url, two
	// query ops at once).
	ErrBadRequest = errors.New("bad request")
	// ErrNotFound: no endpoint has that path.
	ErrNotFound = errors.New("no such endpoint")
	// ErrMethodNotAllowed: the endpoint does not take that method.
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrForbidden: Options.Authorize refused the access.
	ErrForbidden = errors.New("forbidden")
	// ErrRevisionGone: a change stream cannot start where it was asked
	// to: the revision is older than the changes the handler keeps for
	// the table, or newer than the table's (a revision of another
	// database, or of this one before a restart). The client lists the
	// table again, from revision 0. Served as 410 Gone.
	ErrRevisionGone = errors.New("revision no longer available")
	// ErrSlowConsumer: a change stream was ended because its consumer did
	// not keep up. The client reconnects from the last revision it read.
	ErrSlowConsumer = errors.New("change stream consumer too slow")
	// ErrTooManyStreams: Options.MaxStreams change streams are open.
	ErrTooManyStreams = errors.New("too many change streams")
	// ErrShuttingDown: the handler was closed.
	ErrShuttingDown = errors.New("handler is shutting down")
	// ErrNotConfigured: the endpoint needs an option the application did
	// not set (Options.Snapshot for /v1/snapshot).
	ErrNotConfigured = errors.New("not configured")
	// ErrNotClusterMember: GET /v1/cluster on a handler whose database
	// is not a member of a replication cluster (no Options.Cluster), or
	// whose Options.Cluster says so by returning an error that wraps it.
	// Served as 404.
	ErrNotClusterMember = errors.New("not a cluster member")
	// ErrClusterUnavailable: Options.Cluster failed (its error follows,
	// wrapped): the node is closed or stopped, for instance. Served as
	// 503; the client may retry.
	ErrClusterUnavailable = errors.New("cluster status unavailable")
	// ErrInternal: an unexpected failure on the server.
	ErrInternal = errors.New("internal error")
)

// problemDocs is where the error values' documentation is: a Problem's
// Type is the package's page and the value's name as its fragment.
const problemDocs = "https://pkg.go.dev/github.com/strata-db/strata"

// knownErrors maps the error values the API serves to their names and
// statuses. The first match wins, so more specific errors come first.
var knownErrors = []struct {
	err    error
	name   string
	status int
}{
	{strata.ErrTableNotFound, "strata.ErrTableNotFound", http.StatusNotFound},
	{strata.ErrIndexNotFound, "strata.ErrIndexNotFound", http.StatusNotFound},
	{strata.ErrObjectNotFound, "strata.ErrObjectNotFound", http.StatusNotFound},
	{strata.ErrNoFromString, "strata.ErrNoFromString", http.StatusBadRequest},
	{index.ErrParseKey, "index.ErrParseKey", http.StatusBadRequest},
	{strata.ErrInvalidQuery, "strata.ErrInvalidQuery", http.StatusBadRequest},
	{strata.ErrCannotCount, "strata.ErrCannotCount", http.StatusBadRequest},
	{strata.ErrNoQueries, "strata.ErrNoQueries", http.StatusBadRequest},
	{strata.ErrMixedIndexes, "strata.ErrMixedIndexes", http.StatusBadRequest},
	{strata.ErrObjectType, "strata.ErrObjectType", http.StatusBadRequest},
	{strata.ErrPrimaryKey, "strata.ErrPrimaryKey", http.StatusBadRequest},
	{strata.ErrKeyTooLong, "strata.ErrKeyTooLong", http.StatusBadRequest},
	{strata.ErrUniqueConstraint, "strata.ErrUniqueConstraint", http.StatusConflict},
	{ErrBadRequest, "httpapi.ErrBadRequest", http.StatusBadRequest},
	{ErrNotFound, "httpapi.ErrNotFound", http.StatusNotFound},
	{ErrMethodNotAllowed, "httpapi.ErrMethodNotAllowed", http.StatusMethodNotAllowed},
	{ErrForbidden, "httpapi.ErrForbidden", http.StatusForbidden},
	{ErrRevisionGone, "httpapi.ErrRevisionGone", http.StatusGone},
	{ErrSlowConsumer, "httpapi.ErrSlowConsumer", http.StatusServiceUnavailable},
	{ErrTooManyStreams, "httpapi.ErrTooManyStreams", http.StatusServiceUnavailable},
	{ErrShuttingDown, "httpapi.ErrShuttingDown", http.StatusServiceUnavailable},
	{ErrNotConfigured, "httpapi.ErrNotConfigured", http.StatusNotImplemented},
	{ErrNotClusterMember, "httpapi.ErrNotClusterMember", http.StatusNotFound},
	{ErrClusterUnavailable, "httpapi.ErrClusterUnavailable", http.StatusServiceUnavailable},
	{ErrInternal, "httpapi.ErrInternal", http.StatusInternalServerError},
}

// Problem is an RFC 9457 problem document (application/problem+json): the
// body of every error response, and the reason of a change stream's
// EventProblem.
type Problem struct {
	// Type is a URI that identifies the problem: the documentation of the
	// error value named by Error.
	Type string `json:"type"`
	// Title is the error value's message.
	Title string `json:"title"`
	// Status is the HTTP status.
	Status int `json:"status"`
	// Detail is the whole error message, with its context (the table,
	// the index, the key).
	Detail string `json:"detail,omitempty"`
	// Error names the error value, package-qualified
	// ("strata.ErrTableNotFound"); ErrorByName returns it.
	Error string `json:"error"`
}

// ProblemOf returns the problem that describes err: the first of the
// error values this package serves that err wraps gives the name and the
// status; an error that wraps none of them is ErrInternal.
func ProblemOf(err error) Problem {
	for _, k := range knownErrors {
		if errors.Is(err, k.err) {
			return newProblem(k.err, k.name, k.status, err)
		}
	}
	k := knownErrors[len(knownErrors)-1]
	return newProblem(k.err, k.name, k.status, err)
}

func newProblem(sentinel error, name string, status int, err error) Problem {
	pkg, short, _ := strings.Cut(name, ".")
	docs := problemDocs
	if pkg != "strata" {
		docs += "/" + pkg
	}
	return Problem{
		Type:   docs + "#" + short,
		Title:  sentinel.Error(),
		Status: status,
		Detail: err.Error(),
		Error:  name,
	}
}

// ErrorByName returns the error value a Problem's Error member names, or
// nil if the name is not one this package serves. Clients use it to make
// a problem errors.Is-comparable with the value the server met.
func ErrorByName(name string) error {
	for _, k := range knownErrors {
		if k.name == name {
			return k.err
		}
	}
	return nil
}

// writeProblem serves err as a problem document.
func writeProblem(w http.ResponseWriter, err error) {
	p := ProblemOf(err)
	body, _ := json.Marshal(p) // a Problem always encodes
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	h.Set("X-Content-Type-Options", "nosniff")
	if p.Status == http.StatusServiceUnavailable {
		h.Set("Retry-After", "1")
	}
	w.WriteHeader(p.Status)
	w.Write(append(body, '\n'))
}
