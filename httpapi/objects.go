package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/wirejson"
)

// GET /v1/tables/{table}/objects and /v1/tables/{table}/object: the
// objects of a query, and one object, with blocking reads.

func (h *Handler) getObjects(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := h.table(r)
	if err != nil {
		return err
	}
	req, err := h.parseRead(vals, t, false)
	if err != nil {
		return err
	}
	txn, seq, err := h.read(r.Context(), t, req)
	if err != nil {
		return err
	}
	return writePage(w, t, txn, seq, req)
}

func (h *Handler) getObject(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := h.table(r)
	if err != nil {
		return err
	}
	req, err := h.parseRead(vals, t, true)
	if err != nil {
		return err
	}
	txn, seq, err := h.read(r.Context(), t, req)
	if err != nil {
		return err
	}
	rev := t.Revision(txn)
	setRevision(w, rev)
	for o := range seq {
		res := ObjectResult{Table: t.Name(), Revision: rev, Object: objectOf(t, isPrimary(t, req.q.Index), o, wirejson.NewEncoder())}
		return writeJSON(w, res)
	}
	return fmt.Errorf("table %q: no object with key %q in index %q: %w", t.Name(), vals.Get("key"), indexName(t, req.q.Index), strata.ErrObjectNotFound)
}

// read runs req's query on a snapshot and returns it, waiting as await
// says.
func (h *Handler) read(ctx context.Context, t strata.AnyTable, req readRequest) (strata.ReadTxn, iter.Seq[strata.AnyObject], error) {
	var seq iter.Seq[strata.AnyObject]
	txn, err := h.await(ctx, t, req, func(txn strata.ReadTxn, watch bool) (ch <-chan struct{}, err error) {
		if watch {
			seq, ch, err = t.ReadWatch(txn, req.q)
		} else {
			seq, err = t.Read(txn, req.q)
		}
		return ch, err
	})
	if txn == nil {
		return nil, nil, err
	}
	return txn, seq, err
}

// await runs look, a read of req's query, on a snapshot and returns the
// snapshot. A blocking read (waitRev) returns at once if the table's
// revision differs from waitRev; otherwise it waits on the channel look
// returns when asked to watch, and reads a newer snapshot once the
// channel closes (the result may have changed), or returns the first
// when wait runs out. A client whose request goes away ends the wait
// with its context's error, and a nil snapshot.
func (h *Handler) await(ctx context.Context, t strata.AnyTable, req readRequest, look func(txn strata.ReadTxn, watch bool) (<-chan struct{}, error)) (strata.ReadTxn, error) {
	var timeout <-chan time.Time
	for {
		txn := h.db.ReadTxn()
		if !req.block {
			_, err := look(txn, false)
			return txn, err
		}
		watch, err := look(txn, true)
		if err != nil || t.Revision(txn) != req.waitRev {
			return txn, err
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
			req.block = false // read the newer snapshot, and return it
		case <-timeout:
			h.waiting.Add(-1)
			return txn, nil
		case <-ctx.Done():
			h.waiting.Add(-1)
			return nil, ctx.Err()
		case <-h.ctx.Done():
			h.waiting.Add(-1)
			return nil, ErrShuttingDown
		}
	}
}

// objectOf describes o, an object read from the primary index or
// another.
func objectOf(t strata.AnyTable, primary bool, o strata.AnyObject, enc *wirejson.Encoder) Object {
	data, err := enc.Encode(o.Object)
	key, _ := t.KeyString("", primaryKey(t, primary, o))
	obj := Object{Revision: o.Revision, Key: key, Object: append([]byte(nil), data...)}
	if err != nil {
		obj.Object, obj.Error = []byte("null"), err.Error()
	}
	return obj
}

// primaryKey returns the primary key of o, read from the primary index
// (its cursor) or another, or from a read without cursors (nil Cursor).
func primaryKey(t strata.AnyTable, primary bool, o strata.AnyObject) []byte {
	if primary && o.Cursor != nil {
		return o.Cursor
	}
	pk, _ := t.PrimaryKey(o.Object)
	return pk
}

// isPrimary reports whether ix names t's primary index.
func isPrimary(t strata.AnyTable, ix string) bool {
	return ix == "" || ix == t.Indexes()[0].Name
}

func indexName(t strata.AnyTable, ix string) string {
	if ix == "" {
		return t.Indexes()[0].Name
	}
	return ix
}

// writePage streams the page of seq's objects that req selects, as a Page
// document: the objects as they are encoded, so that memory does not grow
// with the page.
func writePage(w http.ResponseWriter, t strata.AnyTable, txn strata.ReadTxn, seq iter.Seq[strata.AnyObject], req readRequest) error {
	rev := t.Revision(txn)
	setRevision(w, rev)
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	bw := bufio.NewWriterSize(w, 32<<10)
	buf := []byte(`{"table":`)
	buf = wirejson.AppendString(buf, t.Name())
	buf = append(buf, `,"revision":`...)
	buf = fmt.Appendf(buf, "%d", rev)
	buf = append(buf, `,"objects":[`...)
	bw.Write(buf)

	primary := isPrimary(t, req.q.Index)
	enc := wirejson.NewEncoder()
	var last []byte
	n := 0
	more := false
	for o := range seq {
		if req.limit > 0 && n == req.limit {
			more = true
			break
		}
		buf = buf[:0]
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, "\n"...)
		data, err := enc.Encode(o.Object)
		key, _ := t.KeyString("", primaryKey(t, primary, o))
		buf = appendObject(buf, "", o.Revision, key, data, err, nil)
		if _, err := bw.Write(buf); err != nil {
			// The client went away: there is nobody to tell.
			return nil
		}
		last = o.Cursor
		n++
	}
	buf = buf[:0]
	if n > 0 {
		buf = append(buf, '\n')
	}
	buf = append(buf, ']')
	if more {
		buf = append(buf, `,"next":"`...)
		buf = append(buf, encodeBase64(last)...)
		buf = append(buf, '"')
	}
	buf = append(buf, "}\n"...)
	bw.Write(buf)
	bw.Flush()
	return nil
}
