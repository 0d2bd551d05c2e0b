package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/strata-db/strata"
)

// POST /v1/tables/{table}/objects and DELETE /v1/tables/{table}/object:
// writes, which need AccessWrite.

// postObjects inserts the objects of the body, a JSON object or a
// sequence of them (NDJSON), in one write transaction: all of them, or,
// on the first error, none.
func (h *Handler) postObjects(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := h.table(r)
	if err != nil {
		return err
	}
	if len(vals) > 0 {
		return fmt.Errorf("%w: a write takes no query parameters", ErrBadRequest)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return fmt.Errorf("%w: body larger than %d bytes", ErrBadRequest, tooLarge.Limit)
		}
		return fmt.Errorf("%w: reading the body: %v", ErrBadRequest, err)
	}
	// Decode everything before locking the table.
	var objs []any
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Errorf("%w: object %d: %v", ErrBadRequest, len(objs)+1, err)
		}
		obj, err := t.DecodeJSON(raw)
		if err != nil {
			return fmt.Errorf("%w: object %d: %v", ErrBadRequest, len(objs)+1, err)
		}
		objs = append(objs, obj)
	}
	if len(objs) == 0 {
		return fmt.Errorf("%w: no object in the body", ErrBadRequest)
	}
	return h.commitWrite(w, r, t, func(wtxn strata.WriteTxn) (WriteResult, error) {
		for i, obj := range objs {
			if _, _, err := t.Insert(wtxn, obj); err != nil {
				return WriteResult{}, fmt.Errorf("object %d: %w", i+1, err)
			}
		}
		return WriteResult{Inserted: len(objs)}, nil
	})
}

// commitWrite runs write in a write transaction of t, commits it, and
// answers write's WriteResult with the table's revision after the commit
// (also in the Strata-Revision header). An error of write's aborts the
// transaction and is served.
func (h *Handler) commitWrite(w http.ResponseWriter, r *http.Request, t strata.AnyTable, write func(strata.WriteTxn) (WriteResult, error)) error {
	wtxn, err := h.writer.WriteTxnContext(r.Context(), t.Meta)
	if err != nil {
		return err
	}
	defer wtxn.Abort()
	res, err := write(wtxn)
	if err != nil {
		return err
	}
	txn, err := wtxn.Commit()
	if err != nil {
		return err
	}
	res.Revision = t.Revision(txn)
	setRevision(w, res.Revision)
	return writeJSON(w, res)
}

// deleteObject deletes the object with the primary key key (text, or raw
// with raw=1).
func (h *Handler) deleteObject(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := h.table(r)
	if err != nil {
		return err
	}
	if vals.Has("index") || vals.Has("waitRev") || vals.Has("wait") {
		return fmt.Errorf("%w: a delete takes key (and raw) only: objects are deleted by primary key", ErrBadRequest)
	}
	req, err := h.parseRead(vals, t, true)
	if err != nil {
		return err
	}
	return h.commitWrite(w, r, t, func(wtxn strata.WriteTxn) (WriteResult, error) {
		seq, err := t.Read(wtxn, req.q)
		if err != nil {
			return WriteResult{}, err
		}
		var obj any
		for o := range seq {
			obj = o.Object
		}
		if obj == nil {
			return WriteResult{}, fmt.Errorf("table %q: no object with key %q: %w", t.Name(), vals.Get("key"), strata.ErrObjectNotFound)
		}
		if _, _, err := t.Delete(wtxn, obj); err != nil {
			return WriteResult{}, err
		}
		return WriteResult{Deleted: 1}, nil
	})
}
