package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/strata-db/strata"
)

// GET /v1/tables/{table}/count: how many objects a query matches, counted
// in the tree (strata.AnyTable.Count), without reading them. The query
// parameters are those of /objects (index, key, prefix, lowerbound,
// from/to, raw, waitRev, wait) but for limit and after; a blocking count
// waits on the count's watch channel.

func (h *Handler) getCount(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := h.table(r)
	if err != nil {
		return err
	}
	for _, p := range []string{"limit", "after"} {
		if vals.Has(p) {
			return fmt.Errorf("%w: %s: a count has no pages", ErrBadRequest, p)
		}
	}
	req, err := h.parseRead(vals, t, false)
	if err != nil {
		return err
	}
	txn, n, err := h.count(r.Context(), t, req)
	if err != nil {
		return err
	}
	rev := t.Revision(txn)
	setRevision(w, rev)
	return writeJSON(w, CountResult{Table: t.Name(), Index: indexName(t, req.q.Index), Revision: rev, Count: n})
}

// count is read's counterpart for counts: it counts req's query on a
// snapshot, and, for a blocking count (waitRev) of a table still at
// waitRev, waits on the count's watch channel for a newer snapshot.
func (h *Handler) count(ctx context.Context, t strata.AnyTable, req readRequest) (strata.ReadTxn, int, error) {
	var timeout <-chan time.Time
	for {
		txn := h.db.ReadTxn()
		if !req.block {
			n, err := t.Count(txn, req.q)
			return txn, n, err
		}
		n, watch, err := t.CountWatch(txn, req.q)
		if err != nil || t.Revision(txn) != req.waitRev {
			return txn, n, err
		}
		if timeout == nil {
			timer := time.NewTimer(req.wait)
			defer timer.Stop()
			timeout = timer.C
		}
		h.waiting.Add(1)
		select {
		case <-watch:
			h.waiting.Add(-1)
			req.block = false
		case <-timeout:
			h.waiting.Add(-1)
			return txn, n, nil
		case <-ctx.Done():
			h.waiting.Add(-1)
			return nil, 0, ctx.Err()
		case <-h.ctx.Done():
			h.waiting.Add(-1)
			return nil, 0, ErrShuttingDown
		}
	}
}
