package remote

import (
	"context"
	"encoding/base64"
	"fmt"
	"iter"
	"net/url"
	"strconv"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

// Combined reads: key queries of several indexes combined as strata.And,
// In and Or combine them (GET /v1/tables/{table}/and, /in and /or).

// Combine says how a combined read combines its queries: it names the
// endpoint.
type Combine string

const (
	// CombineAnd: the objects every query selects, in primary-key order
	// (strata.And).
	CombineAnd Combine = "and"
	// CombineIn: the objects any query selects, every query on one index,
	// in that index's order (strata.In).
	CombineIn Combine = "in"
	// CombineOr: the objects any query selects, in primary-key order
	// (strata.Or).
	CombineOr Combine = "or"
)

// combinedValues returns the query parameters of a combined read of qs:
// each a key query (Op strata.QueryList, or left zero) of Index ("" the
// primary index), with text keys or, in every query alike, raw ones. The
// error wraps strata.ErrInvalidQuery. No queries at all is sent as it is,
// for the server's strata.ErrNoQueries.
func combinedValues(op Combine, qs []Query) (url.Values, error) {
	switch op {
	case CombineAnd, CombineIn, CombineOr:
	default:
		return nil, fmt.Errorf("%w: combine %q: want and, in or or", strata.ErrInvalidQuery, string(op))
	}
	v := url.Values{}
	raw := len(qs) > 0 && qs[0].RawKey != nil
	for i, q := range qs {
		switch {
		case q.Op != strata.QueryAll && q.Op != strata.QueryList:
			return nil, fmt.Errorf("%w: query %d: %v: a combined read takes key queries (list)", strata.ErrInvalidQuery, i, q.Op)
		case (q.RawKey != nil) != raw:
			return nil, fmt.Errorf("%w: query %d: raw and text keys mixed: a combined read's keys are all raw or all text", strata.ErrInvalidQuery, i)
		}
		key := q.Key
		if raw {
			key = base64.RawURLEncoding.EncodeToString(q.RawKey)
		}
		v.Add("q", q.Index+"="+key)
	}
	if raw {
		v.Set("raw", "1")
	}
	return v, nil
}

// combinedPath is the path of the endpoint of op for table.
func combinedPath(table string, op Combine) string {
	return "tables/" + url.PathEscape(table) + "/" + string(op)
}

// Combined returns the objects that the key queries qs, combined as op
// says, select in the table named table, from one snapshot, streamed. Each
// query selects the objects whose key in its Index is its Key (or RawKey:
// raw keys in every query, or in none); its Op is strata.QueryList or left
// zero. The server's errors match strata.ErrNoQueries (no queries),
// strata.ErrIndexNotFound, strata.ErrInvalidQuery (a query of an LPM
// index) and strata.ErrMixedIndexes (CombineIn with queries of several
// indexes). The iteration ends after yielding an error.
func (c *Client) Combined(ctx context.Context, table string, op Combine, qs ...Query) iter.Seq2[httpapi.Object, error] {
	return func(yield func(httpapi.Object, error) bool) {
		v, err := combinedValues(op, qs)
		if err != nil {
			yield(httpapi.Object{}, err)
			return
		}
		c.streamPageAt(ctx, combinedPath(table, op), v, nil, func(o httpapi.Object) bool { return yield(o, nil) }, func(err error) { yield(httpapi.Object{}, err) })
	}
}

// WaitCombined is a blocking combined read (as Wait is of one query): it
// returns the objects qs combined by op select once the result may have
// changed after the table's revision rev (at once if the table is not at
// rev), or when timeout runs out (0: the server's longest wait). The
// server waits on the combined query's one watch channel.
func (c *Client) WaitCombined(ctx context.Context, table string, op Combine, qs []Query, rev strata.Revision, timeout time.Duration) (httpapi.Page, error) {
	v, err := combinedValues(op, qs)
	if err != nil {
		return httpapi.Page{}, err
	}
	setWait(v, rev, timeout)
	var p httpapi.Page
	_, err = c.getJSON(ctx, combinedPath(table, op), v, &p)
	return p, err
}

func setWait(v url.Values, rev strata.Revision, timeout time.Duration) {
	v.Set("waitRev", strconv.FormatUint(rev, 10))
	if timeout > 0 {
		v.Set("wait", timeout.String())
	}
}

// And returns the objects every query of qs selects, in primary-key
// order, each once (strata.And; Client.Combined says what the queries
// are), streamed. Objects that do not decode are Query's errors.
func (t *Table[Obj]) And(ctx context.Context, qs ...Query) iter.Seq2[Obj, error] {
	return t.combined(ctx, CombineAnd, qs)
}

// In returns the objects any query of qs selects, every query on one
// index, in that index's order, each once (strata.In).
func (t *Table[Obj]) In(ctx context.Context, qs ...Query) iter.Seq2[Obj, error] {
	return t.combined(ctx, CombineIn, qs)
}

// Or returns the objects any query of qs selects, in primary-key order,
// each once (strata.Or).
func (t *Table[Obj]) Or(ctx context.Context, qs ...Query) iter.Seq2[Obj, error] {
	return t.combined(ctx, CombineOr, qs)
}

func (t *Table[Obj]) combined(ctx context.Context, op Combine, qs []Query) iter.Seq2[Obj, error] {
	return func(yield func(Obj, error) bool) {
		var zero Obj
		for o, err := range t.c.Combined(ctx, t.name, op, qs...) {
			if err != nil {
				yield(zero, err)
				return
			}
			if !yield(decode[Obj](o)) {
				return
			}
		}
	}
}

// ReadCombined returns the objects qs combined by op select, and the
// revision of the snapshot they were read from.
func (t *Table[Obj]) ReadCombined(ctx context.Context, op Combine, qs ...Query) (Result[Obj], error) {
	v, err := combinedValues(op, qs)
	if err != nil {
		return Result[Obj]{}, err
	}
	return t.collectAt(ctx, combinedPath(t.name, op), v)
}

// WaitCombined is a blocking ReadCombined (Client.WaitCombined): it
// returns the result once it may have changed after revision rev, or when
// timeout runs out (0: the server's longest wait).
func (t *Table[Obj]) WaitCombined(ctx context.Context, op Combine, qs []Query, rev strata.Revision, timeout time.Duration) (Result[Obj], error) {
	v, err := combinedValues(op, qs)
	if err != nil {
		return Result[Obj]{}, err
	}
	setWait(v, rev, timeout)
	return t.collectAt(ctx, combinedPath(t.name, op), v)
}
