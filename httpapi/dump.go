package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/strata-db/strata"
)

// GET /v1/dump and /v1/snapshot: the whole database, streamed.

// getDump streams strata.WriteJSON of one snapshot: every table, or those
// named by table= parameters, in the order given. An error (an object
// encoding/json cannot encode) before anything is sent is a problem;
// after, it aborts the response, so that the client sees a truncated body
// and not a complete document.
func (h *Handler) getDump(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	for name := range vals {
		if name != "table" {
			return fmt.Errorf("%w: unknown query parameter %q", ErrBadRequest, name)
		}
	}
	tables := vals["table"]
	for _, name := range tables {
		if _, err := h.db.AnyTable(name); err != nil {
			return err
		}
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	cw := &countingWriter{w: w}
	if err := strata.WriteJSON(cw, h.db.ReadTxn(), tables...); err != nil {
		if cw.n == 0 && !errors.Is(err, errWrite) {
			// Nothing sent yet: the client can be told.
			hd.Del("Content-Type")
			return fmt.Errorf("%w: dump: %v", ErrInternal, err)
		}
		h.opts.Logger.Warn("httpapi: dump failed", "error", err, "bytes", cw.n)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// getSnapshot streams Options.Snapshot of one snapshot. An error half-way
// aborts the response.
func (h *Handler) getSnapshot(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	if len(vals) > 0 {
		return fmt.Errorf("%w: a snapshot takes no query parameters", ErrBadRequest)
	}
	if h.opts.Snapshot == nil {
		return fmt.Errorf("%w: the application did not set Options.Snapshot", ErrNotConfigured)
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="strata-%s.snapshot"`, time.Now().UTC().Format("20060102T150405Z")))
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	cw := &countingWriter{w: w}
	if err := h.opts.Snapshot(cw, h.db.ReadTxn()); err != nil {
		if cw.n == 0 && !errors.Is(err, errWrite) {
			// Nothing sent yet: the client can be told.
			return fmt.Errorf("%w: snapshot: %v", ErrInternal, err)
		}
		h.opts.Logger.Warn("httpapi: snapshot failed", "error", err, "bytes", cw.n)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// errWrite marks a failed write to the client.
var errWrite = errors.New("writing to the client")

// countingWriter counts the bytes written to w, and marks its errors.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		err = fmt.Errorf("%w: %w", errWrite, err)
	}
	return n, err
}
