package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

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

// count counts req's query on a snapshot, waiting as await says.
func (h *Handler) count(ctx context.Context, t strata.AnyTable, req readRequest) (strata.ReadTxn, int, error) {
	var n int
	txn, err := h.await(ctx, t, req, func(txn strata.ReadTxn, watch bool) (ch <-chan struct{}, err error) {
		if watch {
			n, ch, err = t.CountWatch(txn, req.q)
		} else {
			n, err = t.Count(txn, req.q)
		}
		return ch, err
	})
	return txn, n, err
}
