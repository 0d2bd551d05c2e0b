package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

// Table is a remote table of objects of type Obj, which the client decodes
// from the server's JSON with encoding/json: Obj must decode what the
// server's objects encode to (usually the same Go type, with exported
// fields). Reads take a context and return iterators that yield an error,
// and stop, if the read fails.
type Table[Obj any] struct {
	c    *Client
	name string
}

// NewTable returns the table named name on c's server. It does not check
// that the table exists: the first read does.
func NewTable[Obj any](c *Client, name string) *Table[Obj] {
	return &Table[Obj]{c: c, name: name}
}

// Name returns the table's name.
func (t *Table[Obj]) Name() string { return t.name }

// Client returns the table's client.
func (t *Table[Obj]) Client() *Client { return t.c }

// Result is the result of a read that names its snapshot.
type Result[Obj any] struct {
	// Objects are the objects read, in the query's index order.
	Objects []Obj
	// Revision is the table's revision in the snapshot read.
	Revision strata.Revision
}

func decode[Obj any](o httpapi.Object) (Obj, error) {
	var obj Obj
	if o.Error != "" {
		return obj, fmt.Errorf("object %q at revision %d: %w: the server could not encode it: %s", o.Key, o.Revision, ErrObject, o.Error)
	}
	if err := json.Unmarshal(o.Object, &obj); err != nil {
		return obj, fmt.Errorf("object %q at revision %d: %w: %v", o.Key, o.Revision, ErrObject, err)
	}
	return obj, nil
}

// Query returns the objects q selects, from one snapshot, streamed. An
// object that does not decode into Obj yields an error wrapping ErrObject,
// and the iteration goes on if the loop does; other errors end it.
func (t *Table[Obj]) Query(ctx context.Context, q Query) iter.Seq2[Obj, error] {
	return func(yield func(Obj, error) bool) {
		var zero Obj
		for o, err := range t.c.Objects(ctx, t.name, q) {
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

// Get returns the first object whose key in the named index ("" is the
// primary) is key, typed as text: one object, or none.
func (t *Table[Obj]) Get(ctx context.Context, index, key string) iter.Seq2[Obj, error] {
	return func(yield func(Obj, error) bool) {
		var zero Obj
		res, found, err := t.c.Object(ctx, t.name, Query{Index: index, Op: strata.QueryList, Key: key})
		switch {
		case err != nil:
			yield(zero, err)
		case found:
			yield(decode[Obj](res.Object))
		}
	}
}

// List returns the objects whose key in the named index is key, typed as
// text.
func (t *Table[Obj]) List(ctx context.Context, index, key string) iter.Seq2[Obj, error] {
	return t.Query(ctx, Query{Index: index, Op: strata.QueryList, Key: key})
}

// Prefix returns the objects whose key in the named index starts with
// prefix, typed as text.
func (t *Table[Obj]) Prefix(ctx context.Context, index, prefix string) iter.Seq2[Obj, error] {
	return t.Query(ctx, Query{Index: index, Op: strata.QueryPrefix, Key: prefix})
}

// LowerBound returns the objects whose key in the named index is at least
// key, typed as text.
func (t *Table[Obj]) LowerBound(ctx context.Context, index, key string) iter.Seq2[Obj, error] {
	return t.Query(ctx, Query{Index: index, Op: strata.QueryLowerBound, Key: key})
}

// Range returns the objects whose key in the named index is at least from
// and below to, typed as text.
func (t *Table[Obj]) Range(ctx context.Context, index, from, to string) iter.Seq2[Obj, error] {
	return t.Query(ctx, Query{Index: index, Op: strata.QueryRange, Key: from, To: to})
}

// All returns every object, in primary key order.
func (t *Table[Obj]) All(ctx context.Context) iter.Seq2[Obj, error] {
	return t.Query(ctx, Query{})
}

// Read returns the objects q selects and the revision of the snapshot
// they were read from.
func (t *Table[Obj]) Read(ctx context.Context, q Query) (Result[Obj], error) {
	v, err := q.values()
	if err != nil {
		return Result[Obj]{}, err
	}
	return t.collect(ctx, v)
}

// Wait is a blocking read (Client.Wait): it returns q's result once it may
// have changed after revision rev, or when timeout runs out (0: the
// server's longest wait). A controller loops:
//
//	res, err := hosts.Read(ctx, q)
//	for err == nil {
//		use(res.Objects)
//		res, err = hosts.Wait(ctx, q, res.Revision, time.Minute)
//	}
func (t *Table[Obj]) Wait(ctx context.Context, q Query, rev strata.Revision, timeout time.Duration) (Result[Obj], error) {
	v, err := q.values()
	if err != nil {
		return Result[Obj]{}, err
	}
	v.Set("waitRev", fmt.Sprint(rev))
	if timeout > 0 {
		v.Set("wait", timeout.String())
	}
	return t.collect(ctx, v)
}

func (t *Table[Obj]) collect(ctx context.Context, v url.Values) (Result[Obj], error) {
	return t.collectAt(ctx, "tables/"+url.PathEscape(t.name)+"/objects", v)
}

// collectAt is collect of the Page document at path.
func (t *Table[Obj]) collectAt(ctx context.Context, path string, v url.Values) (Result[Obj], error) {
	var res Result[Obj]
	var err error
	t.c.streamPageAt(ctx, path, v, &res.Revision, func(o httpapi.Object) bool {
		var obj Obj
		if obj, err = decode[Obj](o); err != nil {
			return false
		}
		res.Objects = append(res.Objects, obj)
		return true
	}, func(e error) { err = e })
	return res, err
}

// Insert inserts objs in one write transaction on the server, and returns
// the table's revision after it. It needs the write access the server's
// Authorize must grant.
func (t *Table[Obj]) Insert(ctx context.Context, objs ...Obj) (strata.Revision, error) {
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, o := range objs {
		if err := enc.Encode(o); err != nil {
			return 0, fmt.Errorf("%w: %v", ErrObject, err)
		}
	}
	return t.write(ctx, http.MethodPost, "objects", nil, &body)
}

// Delete deletes the object whose primary key is key, typed as text, and
// returns the table's revision after it. The error wraps
// strata.ErrObjectNotFound if there is none.
func (t *Table[Obj]) Delete(ctx context.Context, key string) (strata.Revision, error) {
	return t.write(ctx, http.MethodDelete, "object", url.Values{"key": {key}}, nil)
}

func (t *Table[Obj]) write(ctx context.Context, method, path string, v url.Values, body *bytes.Buffer) (strata.Revision, error) {
	var r *bytes.Reader
	if body != nil {
		r = bytes.NewReader(body.Bytes())
	} else {
		r = bytes.NewReader(nil)
	}
	resp, err := t.c.request(ctx, method, "tables/"+url.PathEscape(t.name)+"/"+path, v, r, "Content-Type", "application/x-ndjson")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var res httpapi.WriteResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return 0, t.c.readError(ctx, path, err)
	}
	return res.Revision, nil
}
