package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-db/strata"
)

// Options configures a Handler. The zero value serves reads and watches,
// refuses snapshots and writes, and has no web inspector.
type Options struct {
	// Authorize decides whether a request may have the access it asks
	// for: nil allows it, an error refuses it (403, the error in the
	// problem's detail). It is called once per request, before anything
	// is read. Nil means DefaultAuthorize: reads and watches allowed,
	// snapshots and writes refused.
	Authorize func(r *http.Request, access Access) error

	// Snapshot writes a snapshot of the database as of txn to w, for GET
	// /v1/snapshot. Programs that persist with package persist set it to
	// a call of persist.WriteSnapshot with their table bindings:
	//
	//	Snapshot: func(w io.Writer, txn strata.ReadTxn) error {
	//		return persist.WriteSnapshot(w, txn, bindings...)
	//	},
	//
	// Nil serves ErrNotConfigured (501). Downloads also need
	// AccessSnapshot, which DefaultAuthorize refuses.
	Snapshot func(w io.Writer, txn strata.ReadTxn) error

	// Cluster describes the replication cluster the database belongs to,
	// for GET /v1/cluster and the inspector's Cluster panel: a program
	// that replicates with package replicate sets it to its node's
	// ClusterStatus method. It is called once per request, with the
	// request's context, and may be called concurrently. An error is
	// served as ErrClusterUnavailable (503), or as ErrNotClusterMember
	// (404) if it wraps that. Nil: the database is not a cluster member,
	// and GET /v1/cluster serves ErrNotClusterMember.
	Cluster func(ctx context.Context) (ClusterStatus, error)

	// UI serves the web inspector under /ui/, and runs the sampler whose
	// history its plots draw (/v1/samples).
	UI bool

	// Handle names the database handle writes go through (strata.DB's
	// NewHandle), which tables then report as their LastWriter. Default
	// "httpapi".
	Handle string

	// MaxStreams caps the change streams open at once; more are refused
	// with ErrTooManyStreams (503). Default 256.
	MaxStreams int
	// RingSize is how many recent changes the handler keeps per table
	// while it serves change streams of the table, so that a client that
	// reconnects resumes where it stopped instead of listing the table
	// again. A resume from a revision older than the ring gets
	// ErrRevisionGone (410). Default 4096.
	RingSize int
	// RingBytes caps the encoded size of a ring's changes. Default 16 MiB.
	RingBytes int
	// RingRetention is how long a table's ring (and the change feed that
	// fills it) outlives the last stream of the table, so that clients
	// that reconnect within it resume. Default 2 minutes.
	RingRetention time.Duration
	// BookmarkInterval is how often a change stream sends a bookmark
	// (and keeps the connection alive) when nothing else is sent.
	// Default 10 seconds.
	BookmarkInterval time.Duration
	// StreamInterval is the least time between two reads of a table's
	// change feed, and between two writes of a change stream: changes
	// that come meanwhile go together. At high commit rates it bounds the
	// work (wake-ups, encodes, system calls) per table and per stream,
	// for at most twice that much latency. Default 5ms.
	StreamInterval time.Duration
	// WriteTimeout bounds each write of a change stream: a consumer that
	// does not take the data within it is dropped (StreamStats.Dropped).
	// Default 10 seconds.
	WriteTimeout time.Duration
	// MaxWait is the longest wait= of a blocking read; longer ones are cut
	// to it. Default 5 minutes.
	MaxWait time.Duration
	// MaxBodyBytes caps the body of a write. Default 32 MiB.
	MaxBodyBytes int64

	// SampleInterval is the sampler's period (with UI). Default 1 second.
	SampleInterval time.Duration
	// SampleHistory is how many samples the sampler keeps (with UI).
	// Default 600: ten minutes at the default interval.
	SampleHistory int

	// Logger receives the handler's log lines (a stream dropped, a
	// snapshot that failed half-way). Default slog.Default().
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Authorize == nil {
		o.Authorize = DefaultAuthorize
	}
	if o.Handle == "" {
		o.Handle = "httpapi"
	}
	setDefault(&o.MaxStreams, 256)
	setDefault(&o.RingSize, 4096)
	setDefault(&o.RingBytes, 16<<20)
	setDefault(&o.RingRetention, 2*time.Minute)
	setDefault(&o.BookmarkInterval, 10*time.Second)
	setDefault(&o.StreamInterval, DefaultStreamInterval)
	setDefault(&o.WriteTimeout, 10*time.Second)
	setDefault(&o.MaxWait, 5*time.Minute)
	setDefault(&o.MaxBodyBytes, 32<<20)
	setDefault(&o.SampleInterval, time.Second)
	setDefault(&o.SampleHistory, 600)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// DefaultStreamInterval is Options.StreamInterval's default.
const DefaultStreamInterval = 5 * time.Millisecond

func setDefault[T int | int64 | time.Duration](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}

// Handler serves a database over HTTP: see the package documentation for
// its endpoints. It is safe for concurrent use. Its change streams, the
// rings that let them resume, and the sampler run goroutines until Close.
type Handler struct {
	db     *strata.DB
	writer *strata.DB // db's handle named Options.Handle
	opts   Options
	mux    *http.ServeMux
	// instance is the random name of this handler's lifetime (Summary).
	instance string

	// ctx is cancelled by Close: it ends streams, hubs and the sampler.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts the goroutines the handler started (hubs, the sampler).
	wg sync.WaitGroup

	// mu guards hubs and each hub's subscriber count.
	mu   sync.Mutex
	hubs map[strata.TableName]*hub

	streams      atomic.Int64 // open change streams
	streamsTotal atomic.Uint64
	dropped      atomic.Uint64
	// waiting counts the requests blocked in a blocking read (tests and
	// benchmarks wait for it).
	waiting atomic.Int64

	sampler *sampler
	ui      *ui

	// hook, if not nil, is called at each hold point (hold.go) by the
	// goroutine passing it, with the request of the stream passing it
	// (nil for the hubs and Close). Tests set it before the handler
	// serves.
	hook func(p hold, r *http.Request)
}

// New returns a handler serving db. The application mounts it where it
// likes, on a listener it owns (see the package documentation), and calls
// Close when it is done with it.
func New(db *strata.DB, opts Options) *Handler {
	opts.setDefaults()
	var id [8]byte
	rand.Read(id[:])
	h := &Handler{
		db:       db,
		writer:   db.NewHandle(opts.Handle),
		opts:     opts,
		instance: hex.EncodeToString(id[:]),
		hubs:     map[strata.TableName]*hub{},
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if opts.UI {
		h.sampler = newSampler(db, opts.SampleInterval, opts.SampleHistory)
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.sampler.run(h.ctx)
		}()
		h.ui = newUI(h)
	}
	h.mux = h.routes()
	return h
}

// ServeHTTP serves the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mux.ServeHTTP(w, r)
}

// Close ends the change streams (their clients see the stream end, and
// reconnect elsewhere or later), stops the rings' change feeds and the
// sampler, and waits for the handler's goroutines to return. Requests
// that come after it get ErrShuttingDown. It returns nil.
func (h *Handler) Close() error {
	h.at(holdClose, nil)
	h.cancel()
	h.at(holdCloseWait, nil)
	h.wg.Wait()
	return nil
}

// Stats counts the change streams served.
func (h *Handler) Stats() StreamStats {
	return StreamStats{
		Active:  int(h.streams.Load()),
		Served:  h.streamsTotal.Load(),
		Dropped: h.dropped.Load(),
	}
}

// Instance returns the random name of this handler's lifetime, which
// Summary and the Strata-Instance header of every response carry.
func (h *Handler) Instance() string { return h.instance }

// endpoint is one route's handler: it is given the request's query
// parameters (parseQuery's), and returns an error to serve as a problem,
// if it has not written a response yet.
type endpoint func(w http.ResponseWriter, r *http.Request, query url.Values) error

// routes builds the handler's mux. Each path is registered with its
// method; a catch-all serves ErrMethodNotAllowed or ErrNotFound as
// problems, rather than the mux's plain text.
func (h *Handler) routes() *http.ServeMux {
	mux := http.NewServeMux()
	route := func(method, path string, access Access, e endpoint) {
		mux.Handle(method+" "+path, h.serve(access, e))
	}
	route("GET", "/v1/{$}", AccessRead, h.getSummary)
	route("GET", "/v1/tables", AccessRead, h.getTables)
	route("GET", "/v1/tables/{table}", AccessRead, h.getTable)
	route("GET", "/v1/tables/{table}/objects", AccessRead, h.getObjects)
	route("POST", "/v1/tables/{table}/objects", AccessWrite, h.postObjects)
	route("GET", "/v1/tables/{table}/object", AccessRead, h.getObject)
	route("GET", "/v1/tables/{table}/count", AccessRead, h.getCount)
	route("GET", "/v1/tables/{table}/and", AccessRead, h.getMulti("and"))
	route("GET", "/v1/tables/{table}/in", AccessRead, h.getMulti("in"))
	route("GET", "/v1/tables/{table}/or", AccessRead, h.getMulti("or"))
	route("DELETE", "/v1/tables/{table}/and", AccessWrite, h.deleteMulti("and"))
	route("DELETE", "/v1/tables/{table}/in", AccessWrite, h.deleteMulti("in"))
	route("DELETE", "/v1/tables/{table}/or", AccessWrite, h.deleteMulti("or"))
	route("DELETE", "/v1/tables/{table}/object", AccessWrite, h.deleteObject)
	route("GET", "/v1/tables/{table}/changes", AccessWatch, h.getChanges)
	route("GET", "/v1/dump", AccessRead, h.getDump)
	route("GET", "/v1/snapshot", AccessSnapshot, h.getSnapshot)
	route("GET", "/v1/cluster", AccessRead, h.getCluster)
	if h.ui != nil {
		route("GET", "/v1/samples", AccessRead, h.getSamples)
		h.ui.routes(mux, h.serve)
	}
	mux.Handle("/", h.serve(0, func(w http.ResponseWriter, r *http.Request, _ url.Values) error {
		// The mux sends here what no pattern matches: another method
		// of a known path, or an unknown path.
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
			if _, pattern := mux.Handler(withMethod(r, m)); pattern != "/" && pattern != "" {
				return fmt.Errorf("%w: %s %s", ErrMethodNotAllowed, r.Method, r.URL.Path)
			}
		}
		return fmt.Errorf("%w: %s", ErrNotFound, r.URL.Path)
	}))
	return mux
}

func withMethod(r *http.Request, method string) *http.Request {
	r2 := *r
	r2.Method = method
	return &r2
}

// serve wraps an endpoint: the instance header, the query's parameters
// (parseQuery: every endpoint reads them from there, so that a malformed
// one is refused here, for all of them), authorization (access 0 needs
// none), and errors served as problems.
func (h *Handler) serve(access Access, e endpoint) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Strata-Instance", h.instance)
		if h.ctx.Err() != nil {
			writeProblem(w, ErrShuttingDown)
			return
		}
		query, err := parseQuery(r.URL.RawQuery)
		if err != nil {
			writeProblem(w, err)
			return
		}
		if access == AccessRead && query.Has("waitRev") {
			access = AccessWatch
		}
		if access != 0 {
			if err := h.opts.Authorize(r, access); err != nil {
				if !errors.Is(err, ErrForbidden) {
					err = fmt.Errorf("%w: %w", ErrForbidden, err)
				}
				writeProblem(w, err)
				return
			}
		}
		if err := e(w, r, query); err != nil {
			writeProblem(w, err)
		}
	})
}

// table returns the table the request's path names.
func (h *Handler) table(r *http.Request) (strata.AnyTable, error) {
	return h.db.AnyTable(r.PathValue("table"))
}
