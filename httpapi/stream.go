package httpapi

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/wirejson"
)

// GET /v1/tables/{table}/changes?from=R: a table's change stream, as
// NDJSON (one Event per line) or as Server-Sent Events (Accept:
// text/event-stream, or format=sse), whose event names are the kinds and
// whose ids are the revisions, so that a browser's EventSource resumes by
// itself (Last-Event-ID, which takes the place of from).
//
// From 0 (the default), the stream lists the table's objects as upserts,
// in primary key order (without SSE ids: they are not resume points), and
// a bookmark at the revision of the snapshot listed; then every change
// after it. From R > 0 it sends every change after R: each object changed
// since, once or more, in revision order, the newest state last. A
// bookmark follows the first catch-up and every Options.BookmarkInterval.
// A client resumes from the revision of the last change or bookmark it
// read (after the listing's bookmark).

// maxBurst is the most entries a stream copies out of the ring at once.
const maxBurst = 1024

func (h *Handler) getChanges(w http.ResponseWriter, r *http.Request, vals url.Values) error {
	t, err := h.table(r)
	if err != nil {
		return err
	}
	from, sse, err := parseChanges(r, vals, h.instance)
	if err != nil {
		return err
	}
	if n := h.streams.Add(1); n > int64(h.opts.MaxStreams) {
		h.streams.Add(-1)
		return fmt.Errorf("%w: %d open", ErrTooManyStreams, n-1)
	}
	defer h.streams.Add(-1)
	h.at(holdAttach, r)
	hb, err := h.attach(t)
	if err != nil {
		return err
	}
	defer func() {
		h.at(holdDetach, r)
		h.detach(hb)
	}()
	h.at(holdAttached, r)

	txn := h.db.ReadTxn()
	cur := t.Revision(txn)
	start := from
	if from == 0 {
		start = cur
	} else if from > cur {
		return fmt.Errorf("%w: table %q: revision %d is ahead of the table's %d (another database, or this one before a restart)", ErrRevisionGone, t.Name(), from, cur)
	}
	next, ok := hb.seek(start)
	if !ok {
		return fmt.Errorf("%w: table %q: revision %d is older than the oldest change kept; list again from 0", ErrRevisionGone, t.Name(), from)
	}
	h.streamsTotal.Add(1)

	s := newStreamWriter(w, sse, h.opts.WriteTimeout)
	s.begin(t, cur)
	last := from
	if from == 0 {
		if err := s.list(t, txn); err != nil {
			return nil // the client went away
		}
		last = cur
		s.event(EventBookmark, cur, appendBookmark(nil, cur))
	}
	if err := s.flush(); err != nil {
		return nil
	}
	return h.follow(r, hb, s, next, last)
}

// parseChanges reads the parameters of a change stream: from (or the
// Last-Event-ID header, which takes its place), instance (a Summary's
// Instance the client's revisions belong to: another one is
// ErrRevisionGone) and format.
func parseChanges(r *http.Request, vals url.Values, instance string) (from strata.Revision, sse bool, err error) {
	for name := range vals {
		switch name {
		case "from", "instance", "format":
		default:
			return 0, false, fmt.Errorf("%w: unknown query parameter %q", ErrBadRequest, name)
		}
	}
	text := vals.Get("from")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		text = id
	}
	if text != "" {
		if from, err = strconv.ParseUint(text, 10, 64); err != nil {
			return 0, false, fmt.Errorf("%w: from=%q: want a revision", ErrBadRequest, text)
		}
	}
	if id := vals.Get("instance"); id != "" && id != instance && from > 0 {
		return 0, false, fmt.Errorf("%w: revision %d is of server instance %s; this is %s (restarted): list again from 0", ErrRevisionGone, from, id, instance)
	}
	switch vals.Get("format") {
	case "":
		sse = strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	case "sse":
		sse = true
	case "ndjson":
	default:
		return 0, false, fmt.Errorf("%w: format=%q: want sse or ndjson", ErrBadRequest, vals.Get("format"))
	}
	return from, sse, nil
}

// follow sends the hub's entries from next on, skipping those not after
// last, with bookmarks, until the client goes away, the handler closes
// or the stream falls behind the ring.
func (h *Handler) follow(r *http.Request, hb *hub, s *streamWriter, next uint64, last strata.Revision) error {
	ticker := time.NewTicker(h.opts.BookmarkInterval)
	defer ticker.Stop()
	bookmarked := last
	bookmarkDue := true // the first catch-up
	tick := false
	// An SSE stream writes each entry as an event; an NDJSON one writes
	// the lines of the entries that follow one another in a chunk (a
	// round's) in one write.
	var entries []ringEntry
	var spans []span
	pause := newPause(h.opts.StreamInterval)
	defer pause.stop()
	for {
		var n int
		var head strata.Revision
		var wake <-chan struct{}
		var evicted, stopped bool
		h.at(holdStreamRead, r)
		if s.sse {
			entries, head, wake, evicted, stopped = hb.read(next, entries[:0], maxBurst)
			n = len(entries)
		} else {
			spans, n, head, wake, evicted, stopped = hb.readSpans(next, last, spans[:0], maxBurst)
		}
		if evicted {
			h.dropped.Add(1)
			h.opts.Logger.Info("httpapi: change stream dropped: it fell behind the ring", "table", hb.table.Name(), "revision", last)
			s.problem(fmt.Errorf("%w: table %q: the stream fell more than the ring's changes behind at revision %d", ErrSlowConsumer, hb.table.Name(), last))
			return nil
		}
		if stopped {
			s.problem(ErrShuttingDown)
			return nil
		}
		next += uint64(n)
		h.at(holdStreamWrite, r)
		for i := range entries {
			if e := &entries[i]; e.rev > last {
				s.event(e.kind, e.rev, e.line())
				last = e.rev
			}
		}
		for _, sp := range spans {
			s.raw(sp.chunk[sp.off:sp.end])
			last = sp.rev
		}
		caughtUp := n < maxBurst
		// A bookmark says every change up to it was sent: it is at the
		// ring's head, once the stream has every entry and none after
		// the head (the rest of their batch may hold older changes).
		if caughtUp && head >= last && (tick || bookmarkDue && head > bookmarked) {
			last = head
			s.event(EventBookmark, last, appendBookmark(nil, last))
			bookmarked, bookmarkDue, tick = last, false, false
		}
		if s.pending() {
			if err := s.flush(); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					h.dropped.Add(1)
					h.opts.Logger.Info("httpapi: change stream dropped: a write timed out", "table", hb.table.Name(), "revision", last)
				}
				return nil
			}
		}
		if !caughtUp {
			continue
		}
		h.at(holdStreamWait, r)
		select {
		case <-wake:
			// Let what comes in the next StreamInterval go with it.
			if !pause.wait(r.Context().Done()) {
				return nil
			}
		case <-ticker.C:
			tick = true
		case <-r.Context().Done():
			return nil
		case <-h.ctx.Done():
			s.problem(ErrShuttingDown)
			return nil
		}
	}
}

// streamWriter writes a change stream's events, as NDJSON or SSE.
type streamWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	bw      *bufio.Writer
	sse     bool
	timeout time.Duration
	// dirty: events written since the last flush.
	dirty bool
	buf   []byte
}

func newStreamWriter(w http.ResponseWriter, sse bool, timeout time.Duration) *streamWriter {
	return &streamWriter{w: w, rc: http.NewResponseController(w), bw: bufio.NewWriterSize(w, 64<<10), sse: sse, timeout: timeout}
}

// begin sends the response's header.
func (s *streamWriter) begin(t strata.AnyTable, rev strata.Revision) {
	hd := s.w.Header()
	if s.sse {
		hd.Set("Content-Type", "text/event-stream")
	} else {
		hd.Set("Content-Type", "application/x-ndjson")
	}
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	// Proxies such as nginx buffer responses unless told not to.
	hd.Set("X-Accel-Buffering", "no")
	setRevision(s.w, rev)
	s.w.WriteHeader(http.StatusOK)
	s.mark()
	if s.sse {
		s.bw.WriteString("retry: 2000\n\n")
	}
}

// list sends the objects of t in txn as upserts.
func (s *streamWriter) list(t strata.AnyTable, txn strata.ReadTxn) error {
	seq, err := t.Read(txn, strata.AnyQuery{})
	if err != nil {
		return err
	}
	enc := wirejson.NewEncoder()
	n := 0
	for o := range seq {
		key, _ := t.KeyString("", o.Cursor)
		data, err := enc.Encode(o.Object)
		s.buf = appendObject(s.buf[:0], EventUpsert, o.Revision, key, data, err, t.TableRow(o.Object))
		s.event(EventUpsert, 0, s.buf)
		if n++; n%1024 == 0 {
			if err := s.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// event writes one event. rev 0 writes no SSE id.
func (s *streamWriter) event(kind EventKind, rev strata.Revision, line []byte) {
	s.mark()
	if !s.sse {
		s.bw.Write(line)
		s.bw.WriteByte('\n')
		return
	}
	if rev > 0 {
		s.bw.WriteString("id: ")
		s.bw.WriteString(strconv.FormatUint(rev, 10))
		s.bw.WriteByte('\n')
	}
	s.bw.WriteString("event: ")
	s.bw.WriteString(string(kind))
	s.bw.WriteString("\ndata: ")
	s.bw.Write(line)
	s.bw.WriteString("\n\n")
}

// raw writes NDJSON lines as they are.
func (s *streamWriter) raw(lines []byte) {
	s.mark()
	s.bw.Write(lines)
}

// problem sends a problem event and flushes, best effort, waiting a
// second at most: the stream ends, and its consumer may be stuck.
func (s *streamWriter) problem(err error) {
	p := ProblemOf(err)
	line, _ := wirejson.Marshal(Event{Kind: EventProblem, Problem: &p})
	s.event(EventProblem, 0, line)
	s.rc.SetWriteDeadline(time.Now().Add(min(s.timeout, time.Second)))
	s.flush()
}

func (s *streamWriter) pending() bool { return s.dirty }

// mark notes that events are about to be written: the first since a
// flush gives the writes until the next flush Options.WriteTimeout.
func (s *streamWriter) mark() {
	if s.dirty {
		return
	}
	s.dirty = true
	// A ResponseWriter without deadlines (a test's recorder) keeps none.
	s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
}

// flush sends what was written.
func (s *streamWriter) flush() error {
	if !s.dirty {
		return nil
	}
	s.dirty = false
	if err := s.bw.Flush(); err != nil {
		return err
	}
	return s.rc.Flush()
}
