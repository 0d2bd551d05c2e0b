package remote

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

// Query says which objects of a table a read selects: those of one index
// that Op selects with Key (and To), in key order. Keys are text, which
// the server reads with the index's FromString (or the default of its key
// type), or raw: RawKey and RawTo, when RawKey is set, are the encoded
// keys (index.Key) themselves.
type Query struct {
	// Index names the index; "" is the primary index.
	Index string
	// Op is what to select; the zero QueryOp is strata.QueryAll.
	Op strata.QueryOp
	// Key is QueryList's key, QueryPrefix's prefix, QueryLowerBound's
	// bound and QueryRange's start; To is QueryRange's end, excluded.
	Key, To string
	// RawKey and RawTo, if RawKey is not nil, take the place of Key and
	// To, as raw keys.
	RawKey, RawTo []byte
}

// values returns q's query parameters. The error wraps
// strata.ErrInvalidQuery.
func (q Query) values() (url.Values, error) {
	v := url.Values{}
	if q.Index != "" {
		v.Set("index", q.Index)
	}
	key, to := q.Key, q.To
	if q.RawKey != nil {
		v.Set("raw", "1")
		key, to = base64.RawURLEncoding.EncodeToString(q.RawKey), base64.RawURLEncoding.EncodeToString(q.RawTo)
	}
	switch q.Op {
	case strata.QueryAll:
	case strata.QueryList:
		v.Set("key", key)
	case strata.QueryPrefix:
		v.Set("prefix", key)
	case strata.QueryLowerBound:
		v.Set("lowerbound", key)
	case strata.QueryRange:
		v.Set("from", key)
		v.Set("to", to)
	default:
		return nil, fmt.Errorf("%w: %v", strata.ErrInvalidQuery, q.Op)
	}
	return v, nil
}

// Objects returns the objects q selects in the table named table, from one
// snapshot, as the server encodes them, streamed: memory does not grow
// with the result. The iteration ends after yielding an error.
func (c *Client) Objects(ctx context.Context, table string, q Query) iter.Seq2[httpapi.Object, error] {
	return func(yield func(httpapi.Object, error) bool) {
		v, err := q.values()
		if err != nil {
			yield(httpapi.Object{}, err)
			return
		}
		c.streamPage(ctx, table, v, nil, func(o httpapi.Object) bool { return yield(o, nil) }, func(err error) { yield(httpapi.Object{}, err) })
	}
}

// Page reads at most limit objects that q selects in the table named
// table, after the cursor after (a previous Page's Next; "" for the
// first page).
func (c *Client) Page(ctx context.Context, table string, q Query, limit int, after string) (httpapi.Page, error) {
	v, err := q.values()
	if err != nil {
		return httpapi.Page{}, err
	}
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if after != "" {
		v.Set("after", after)
	}
	var p httpapi.Page
	_, err = c.getJSON(ctx, "tables/"+url.PathEscape(table)+"/objects", v, &p)
	return p, err
}

// Wait is a blocking read: it returns the objects q selects once the
// result may have changed after the table's revision rev (at once if the
// table is not at rev), or when timeout runs out (the server caps it; 0
// means the server's longest). A client loops, passing the revision of
// each result to the next Wait. A result at a revision below rev means
// the server restarted.
func (c *Client) Wait(ctx context.Context, table string, q Query, rev strata.Revision, timeout time.Duration) (httpapi.Page, error) {
	v, err := q.values()
	if err != nil {
		return httpapi.Page{}, err
	}
	v.Set("waitRev", strconv.FormatUint(rev, 10))
	if timeout > 0 {
		v.Set("wait", timeout.String())
	}
	var p httpapi.Page
	_, err = c.getJSON(ctx, "tables/"+url.PathEscape(table)+"/objects", v, &p)
	return p, err
}

// Count returns how many objects of table q selects, counted by the
// server without reading them (GET /v1/tables/{table}/count), with the
// table's revision. A query the index cannot count fails with a *Error
// whose Problem names strata.ErrCannotCount.
func (c *Client) Count(ctx context.Context, table string, q Query) (httpapi.CountResult, error) {
	var res httpapi.CountResult
	v, err := q.values()
	if err != nil {
		return res, err
	}
	_, err = c.getJSON(ctx, "tables/"+url.PathEscape(table)+"/count", v, &res)
	return res, err
}

// Object returns the first object whose key in q's index is q's key (q.Op
// is ignored), and the table's revision. found is false if there is none.
func (c *Client) Object(ctx context.Context, table string, q Query) (obj httpapi.ObjectResult, found bool, err error) {
	q.Op = strata.QueryList
	v, err := q.values()
	if err != nil {
		return obj, false, err
	}
	_, err = c.getJSON(ctx, "tables/"+url.PathEscape(table)+"/object", v, &obj)
	if status(err) == http.StatusNotFound && isObjectNotFound(err) {
		return obj, false, nil
	}
	return obj, err == nil, err
}

func isObjectNotFound(err error) bool {
	e, _ := err.(*Error)
	return e != nil && e.Problem.Error == "strata.ErrObjectNotFound"
}

// streamPage reads a Page document of the table's objects, yielding its
// objects as they are decoded; rev, if not nil, receives the page's
// revision.
func (c *Client) streamPage(ctx context.Context, table string, v url.Values, rev *strata.Revision, yield func(httpapi.Object) bool, fail func(error)) {
	c.streamPageAt(ctx, "tables/"+url.PathEscape(table)+"/objects", v, rev, yield, fail)
}

// streamPageAt is streamPage of the Page document at path.
func (c *Client) streamPageAt(ctx context.Context, path string, v url.Values, rev *strata.Revision, yield func(httpapi.Object) bool, fail func(error)) {
	resp, err := c.request(ctx, http.MethodGet, path, v, nil)
	if err != nil {
		fail(err)
		return
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	bad := func(format string, args ...any) {
		fail(fmt.Errorf("%s: %w: %s", path, ErrProtocol, fmt.Sprintf(format, args...)))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		bad("not a page")
		return
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			fail(c.readError(ctx, path, err))
			return
		}
		switch tok {
		case "revision":
			var r strata.Revision
			if err := dec.Decode(&r); err != nil {
				fail(c.readError(ctx, path, err))
				return
			}
			if rev != nil {
				*rev = r
			}
		case "objects":
			if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
				bad("objects is not an array")
				return
			}
			for dec.More() {
				var o httpapi.Object
				if err := dec.Decode(&o); err != nil {
					fail(c.readError(ctx, path, err))
					return
				}
				if !yield(o) {
					return
				}
			}
			if _, err := dec.Token(); err != nil {
				fail(c.readError(ctx, path, err))
				return
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				fail(c.readError(ctx, path, err))
				return
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		// The server cut the response short.
		fail(c.readError(ctx, path, err))
	}
}
