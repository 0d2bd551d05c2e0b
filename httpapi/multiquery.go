package httpapi

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/strata-db/strata"
)

// GET /v1/tables/{table}/and, /in and /or: the objects of several key
// queries combined (strata.AnyTable.And, In and Or; docs/queries.md).
//
//	q=INDEX=KEY      one query: the objects whose key in INDEX is KEY;
//	                 repeated, once a query. q=KEY (no "=") and q==KEY
//	                 are queries of the primary index
//	raw=1            the keys are raw, in base64url (all of them)
//	waitRev=R        block until the result may have changed after the
//	wait=30s         table's revision R, as /objects does
//
// The result is a Page without Next: /and's objects in primary-key order,
// /in's (every query on one index) in the index's order, /or's in
// primary-key order, each object once. A combined result has no cursor,
// so limit and after are refused. A blocking read waits on the query's one
// watch channel (strata.AndWatch and the others).

// multiOps are the endpoints' names and the AnyTable methods they call.
var multiOps = map[string]struct {
	read  func(strata.AnyTable, strata.ReadTxn, ...strata.AnyQuery) (iter.Seq[strata.AnyObject], error)
	watch func(strata.AnyTable, strata.ReadTxn, ...strata.AnyQuery) (iter.Seq[strata.AnyObject], <-chan struct{}, error)
}{
	"and": {strata.AnyTable.And, strata.AnyTable.AndWatch},
	"in":  {strata.AnyTable.In, strata.AnyTable.InWatch},
	"or":  {strata.AnyTable.Or, strata.AnyTable.OrWatch},
}

// getMulti returns the endpoint of op: "and", "in" or "or".
func (h *Handler) getMulti(op string) endpoint {
	return func(w http.ResponseWriter, r *http.Request, vals url.Values) error {
		t, err := h.table(r)
		if err != nil {
			return err
		}
		qs, req, err := h.parseMulti(vals, t)
		if err != nil {
			return err
		}
		txn, seq, err := h.readMulti(r.Context(), t, op, qs, req)
		if err != nil {
			return err
		}
		// The objects have no cursor: writePage reads their primary keys
		// from them.
		return writePage(w, t, txn, seq, readRequest{})
	}
}

// deleteMulti returns the DELETE endpoint of op: it deletes, in one write
// transaction, every object the combined read op selects in that
// transaction (strata.AnyTable.DeleteEach), and answers a WriteResult
// with the count. It takes q (and raw), not a wait.
func (h *Handler) deleteMulti(op string) endpoint {
	return func(w http.ResponseWriter, r *http.Request, vals url.Values) error {
		t, err := h.table(r)
		if err != nil {
			return err
		}
		if vals.Has("waitRev") || vals.Has("wait") {
			return fmt.Errorf("%w: a delete takes q (and raw) only", ErrBadRequest)
		}
		qs, _, err := h.parseMulti(vals, t)
		if err != nil {
			return err
		}
		return h.commitWrite(w, r, t, func(wtxn strata.WriteTxn) (WriteResult, error) {
			seq, err := multiOps[op].read(t, wtxn, qs...)
			if err != nil {
				return WriteResult{}, err
			}
			n, err := t.DeleteEach(wtxn, seq)
			return WriteResult{Deleted: n}, err
		})
	}
}

// parseMulti reads the queries of a combined read of t, and its wait. An
// unknown index fails before any key is parsed; no queries at all is left
// to the read (strata.ErrNoQueries).
func (h *Handler) parseMulti(vals url.Values, t strata.AnyTable) ([]strata.AnyQuery, readRequest, error) {
	var req readRequest
	for name := range vals {
		switch name {
		case "q":
		case "raw", "waitRev", "wait":
			if len(vals[name]) > 1 {
				return nil, req, fmt.Errorf("%w: query parameter %q given %d times", ErrBadRequest, name, len(vals[name]))
			}
		case "limit", "after":
			return nil, req, fmt.Errorf("%w: %s: a combined query has no pages", ErrBadRequest, name)
		default:
			return nil, req, fmt.Errorf("%w: unknown query parameter %q", ErrBadRequest, name)
		}
	}
	raw := false
	if vals.Has("raw") {
		b, err := strconv.ParseBool(vals.Get("raw"))
		if err != nil {
			return nil, req, fmt.Errorf("%w: raw=%q: want a boolean", ErrBadRequest, vals.Get("raw"))
		}
		raw = b
	}
	qs := make([]strata.AnyQuery, len(vals["q"]))
	for i, s := range vals["q"] {
		ix, _ := splitMultiQuery(s)
		qs[i] = strata.AnyQuery{Index: ix, Op: strata.QueryList}
		if ix != "" && !slices.ContainsFunc(t.Indexes(), func(info strata.IndexInfo) bool { return info.Name == ix }) {
			return nil, req, fmt.Errorf("table %q: q=%q: index %q: %w", t.Name(), s, ix, strata.ErrIndexNotFound)
		}
	}
	for i, s := range vals["q"] {
		_, text := splitMultiQuery(s)
		var err error
		if raw {
			if qs[i].Key, err = decodeBase64(text); err != nil {
				return nil, req, fmt.Errorf("%w: q=%q: not base64url: %v", ErrBadRequest, s, err)
			}
			continue
		}
		if qs[i].Key, err = t.ParseKey(qs[i].Index, text); err != nil {
			return nil, req, fmt.Errorf("q=%q: %w", s, err)
		}
	}
	return qs, req, h.parseWait(vals, &req)
}

// splitMultiQuery splits a q= value, INDEX=KEY, at its first "=": index
// names have none (strata.NamePattern). Without one, the value is a key
// of the primary index ("").
func splitMultiQuery(s string) (ix, key string) {
	ix, key, ok := strings.Cut(s, "=")
	if !ok {
		return "", s
	}
	return ix, key
}

// readMulti runs the combined read op of qs on a snapshot, waiting as
// await says.
func (h *Handler) readMulti(ctx context.Context, t strata.AnyTable, op string, qs []strata.AnyQuery, req readRequest) (strata.ReadTxn, iter.Seq[strata.AnyObject], error) {
	f := multiOps[op]
	var seq iter.Seq[strata.AnyObject]
	txn, err := h.await(ctx, t, req, func(txn strata.ReadTxn, watch bool) (ch <-chan struct{}, err error) {
		if watch {
			seq, ch, err = f.watch(t, txn, qs...)
		} else {
			seq, err = f.read(t, txn, qs...)
		}
		return ch, err
	})
	if txn == nil || err != nil {
		return nil, nil, err
	}
	return txn, seq, nil
}
