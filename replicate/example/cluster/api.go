package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/replicate"
)

// The HTTP API, on -api:
//
//	PUT /objects/{key}      body: the value. Node.Write on this node (a
//	                        follower forwards to the leader); answers
//	                        {"index", "writes"} once this node published
//	                        the write. 409: a conflict, retried first;
//	                        503: no leader, nothing written; 500: any
//	                        other failure, which may have committed (an
//	                        ambiguous outcome).
//	GET  /objects/{key}     the object; 404 if there is none
//	GET  /objects           every object, in key order
//	     ?read=stale        (default) this node's state
//	     ?read=linearizable the cluster's latest state
//	     ?index=N           this node's state once it published index N
//	                        (read your writes: N from a PUT's answer)
//	GET  /status            the node's raft state, indexes, and a digest
//	                        of the table that is the same on every node
//	                        at the same published index
//	GET  /watch             a change feed of the table, one JSON change
//	                        a line: every object, then each change
type api struct {
	id      string
	node    *replicate.Node
	db      *strata.DB
	objects strata.RWTable[*object]
	logs    logBounds

	srv *http.Server
	// cancel ends the watches, which would otherwise keep Shutdown
	// waiting for good.
	cancel context.CancelFunc
}

// logBounds is what the API reads of raft's log store.
type logBounds interface {
	FirstIndex() (uint64, error)
	LastIndex() (uint64, error)
}

func newAPI(id string, node *replicate.Node, db *strata.DB, objects strata.RWTable[*object], logs logBounds) *api {
	base, cancel := context.WithCancel(context.Background())
	a := &api{id: id, node: node, db: db, objects: objects, logs: logs, cancel: cancel}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /objects/{key}", a.put)
	mux.HandleFunc("GET /objects/{key}", a.get)
	mux.HandleFunc("GET /objects", a.list)
	mux.HandleFunc("GET /status", a.status)
	mux.HandleFunc("GET /watch", a.watch)
	a.srv = &http.Server{
		Handler:           mux,
		BaseContext:       func(net.Listener) context.Context { return base },
		ReadHeaderTimeout: 10 * time.Second,
	}
	return a
}

// serve serves on ln until close.
func (a *api) serve(ln net.Listener) error {
	if err := a.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// close ends the watches and the requests in progress.
func (a *api) close() {
	a.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
}

// maxValue bounds a PUT's body: an entry holds at most 1 MiB.
const maxValue = 512 << 10

func (a *api) put(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	value, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValue))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	tables := []strata.TableMeta{a.objects}
	var written *object
	for {
		index, err := a.node.Write(ctx, tables, func(txn strata.WriteTxn) error {
			written = &object{Key: key, Value: string(value), Writes: 1}
			if old, _, found := a.objects.Get(txn, objectByKey.Query(key)); found {
				written.Writes = old.Writes + 1
			}
			_, _, err := a.objects.Insert(txn, written)
			return err
		}, replicate.ObjectConflicts())
		switch {
		case err == nil:
			writeJSON(w, map[string]any{"index": index, "writes": written.Writes})
			return
		case errors.Is(err, replicate.ErrConflict) && ctx.Err() == nil:
			continue // nothing was written: run it again on the newer state
		case errors.Is(err, replicate.ErrConflict):
			http.Error(w, err.Error(), http.StatusConflict)
		case errors.Is(err, replicate.ErrAmbiguous):
			http.Error(w, "ambiguous: "+err.Error(), http.StatusInternalServerError)
		case errors.Is(err, replicate.ErrNotLeader), errors.Is(err, replicate.ErrNotReady),
			errors.Is(err, replicate.ErrShutdown):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		default:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
		return
	}
}

// readTxn returns the ReadTxn the request's ?read= or ?index= asks for.
func (a *api) readTxn(r *http.Request) (strata.ReadTxn, error) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	if s := r.URL.Query().Get("index"); s != "" {
		index, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("index %q: %w", s, err)
		}
		return a.node.ReadAtLeast(ctx, index)
	}
	switch mode := r.URL.Query().Get("read"); mode {
	case "", "stale":
		return a.node.ReadTxn(ctx)
	case "linearizable":
		return a.node.ReadLinearizable(ctx)
	default:
		return nil, fmt.Errorf("read=%q: not stale or linearizable", mode)
	}
}

func (a *api) get(w http.ResponseWriter, r *http.Request) {
	txn, err := a.readTxn(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	o, _, found := a.objects.Get(txn, objectByKey.Query(r.PathValue("key")))
	if !found {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	writeJSON(w, o)
}

func (a *api) list(w http.ResponseWriter, r *http.Request) {
	txn, err := a.readTxn(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	objs := []*object{}
	for o := range a.objects.All(txn) {
		objs = append(objs, o)
	}
	writeJSON(w, objs)
}

// status is GET /status's answer.
type status struct {
	ID        string `json:"id"`
	State     string `json:"state"`
	Leader    string `json:"leader"`
	Term      uint64 `json:"term"`
	Commit    uint64 `json:"commit"`
	Applied   uint64 `json:"applied"`
	Published uint64 `json:"published"`
	// LogFirst and LogLast are the first and last indexes in raft's log
	// (snapshots compact its head); Snapshot is the index of raft's
	// latest snapshot.
	LogFirst uint64 `json:"log_first"`
	LogLast  uint64 `json:"log_last"`
	Snapshot string `json:"snapshot"`
	// Objects, Revision and Digest describe the table as a ReadTxn taken
	// after Published was read holds it: Digest is a SHA-256 of every
	// object and its revision, in key order.
	Objects  int    `json:"objects"`
	Revision uint64 `json:"revision"`
	Digest   string `json:"digest"`
}

func (a *api) status(w http.ResponseWriter, r *http.Request) {
	h := a.node.Health()
	first, _ := a.logs.FirstIndex()
	last, _ := a.logs.LastIndex()
	s := status{
		ID: a.id, State: h.State.String(), Leader: string(h.LeaderID), Term: h.Term,
		Commit: h.CommitIndex, Applied: h.AppliedIndex, Published: h.PublishedIndex,
		LogFirst: first, LogLast: last, Snapshot: a.node.Raft().Stats()["last_snapshot_index"],
	}
	txn := a.db.ReadTxn()
	d := sha256.New()
	for o, rev := range a.objects.All(txn) {
		fmt.Fprintf(d, "%q %q %d %d\n", o.Key, o.Value, o.Writes, rev)
		s.Objects++
	}
	s.Revision = uint64(a.objects.Revision(txn))
	s.Digest = hex.EncodeToString(d.Sum(nil))
	writeJSON(w, s)
}

// change is one line of GET /watch.
type change struct {
	Object   *object `json:"object"`
	Revision uint64  `json:"revision"`
	Deleted  bool    `json:"deleted,omitempty"`
}

// watch streams the table's change feed until the client goes away or the
// server closes. A feed opened on any node goes on across leader changes:
// the node applies every entry, whoever proposed it.
func (a *api) watch(w http.ResponseWriter, r *http.Request) {
	txn := a.db.WriteTxn(a.objects)
	feed, err := a.objects.Changes(txn)
	if err != nil {
		txn.Abort()
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if _, err := txn.Commit(); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer feed.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	for {
		changes, watch := feed.Next(a.db.ReadTxn())
		for c, rev := range changes {
			if err := enc.Encode(change{Object: c.Object, Revision: uint64(rev), Deleted: c.Deleted}); err != nil {
				return
			}
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-watch: // nil once the feed is closed: then the context ends it
		case <-r.Context().Done():
			return
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
