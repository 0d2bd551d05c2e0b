package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

// EventRelist is the kind of the event Client.Changes yields before each
// listing of the table: the upserts from it to the next bookmark are the
// table's whole content, and an object the consumer holds that is not
// among them was deleted. It is the client's, not the server's: the
// server lists when asked for changes from revision 0.
const EventRelist httpapi.EventKind = "relist"

// Changes returns the change stream of the table named table from
// revision from (0: list the table first), as the server sends it, and
// keeps it going: when the connection breaks, or the server drops the
// stream, it reconnects (with backoff) and resumes from the last revision
// it delivered; when the server can no longer serve that revision (410
// Gone: its ring of recent changes moved on, or it restarted) it lists
// the table again, after an EventRelist. Events of kind
// httpapi.EventProblem are not yielded: the client acts on them.
//
// The iteration ends when ctx is done (without an error), or after
// yielding an error the client cannot get past: a table that does not
// exist, a refused access, a response that is not the API's.
func (c *Client) Changes(ctx context.Context, table string, from strata.Revision) iter.Seq2[httpapi.Event, error] {
	return func(yield func(httpapi.Event, error) bool) {
		s := &eventStream{c: c, table: table, from: from}
		defer s.disconnect()
		for {
			ev, err := s.next(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				yield(ev, err)
				return
			}
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// ChangeKind is the kind of a Change.
type ChangeKind uint8

const (
	// ChangeUpsert: the object was inserted or replaced.
	ChangeUpsert ChangeKind = iota + 1
	// ChangeDelete: the object was deleted.
	ChangeDelete
	// ChangeBookmark: every change up to Revision has been delivered;
	// after a ChangeRelist, the listing is complete.
	ChangeBookmark
	// ChangeRelist: the upserts up to the next bookmark are the table's
	// whole content; an object not among them was deleted.
	ChangeRelist
)

var changeKindNames = [...]string{"", "upsert", "delete", "bookmark", "relist"}

// String returns the kind's name.
func (k ChangeKind) String() string {
	if int(k) < len(changeKindNames) && k != 0 {
		return changeKindNames[k]
	}
	return "ChangeKind(" + strconv.Itoa(int(k)) + ")"
}

// Change is one change of a remote table's change stream.
type Change[Obj any] struct {
	Kind ChangeKind
	// Object is the object upserted, or deleted (as it was).
	Object Obj
	// Revision is the change's revision, or the bookmark's.
	Revision strata.Revision
	// Key is the object's primary key, as text.
	Key string
}

// Changes is Client.Changes of the table, with the objects decoded: an
// object that does not decode into Obj yields an error wrapping ErrObject,
// and the iteration goes on if the loop does.
func (t *Table[Obj]) Changes(ctx context.Context, from strata.Revision) iter.Seq2[Change[Obj], error] {
	return func(yield func(Change[Obj], error) bool) {
		for ev, err := range t.c.Changes(ctx, t.name, from) {
			if err != nil {
				yield(Change[Obj]{}, err)
				return
			}
			if !yield(changeOf[Obj](ev)) {
				return
			}
		}
	}
}

func changeOf[Obj any](ev httpapi.Event) (Change[Obj], error) {
	ch := Change[Obj]{Revision: ev.Revision, Key: ev.Key}
	var err error
	switch ev.Kind {
	case httpapi.EventUpsert, httpapi.EventDelete:
		ch.Kind = ChangeUpsert
		if ev.Kind == httpapi.EventDelete {
			ch.Kind = ChangeDelete
		}
		ch.Object, err = decode[Obj](httpapi.Object{Revision: ev.Revision, Key: ev.Key, Object: ev.Object, Error: ev.Error})
	case httpapi.EventBookmark:
		ch.Kind = ChangeBookmark
	case EventRelist:
		ch.Kind = ChangeRelist
	default:
		err = fmt.Errorf("%w: event of kind %q", ErrProtocol, ev.Kind)
	}
	return ch, err
}

// eventStream is a change stream that reconnects, resumes and lists
// again. Not safe for concurrent use.
type eventStream struct {
	c     *Client
	table string
	// from is where the stream resumes: the revision of the last change
	// or bookmark delivered, 0 to list the table (again).
	from strata.Revision
	// listing: a listing is being delivered; its bookmark ends it (and
	// until then from stays 0).
	listing bool
	// instance is the server instance whose revisions from is of.
	instance string
	// failures counts the connection attempts that failed in a row.
	failures int

	body io.ReadCloser
	br   *bufio.Reader
}

// next returns the stream's next event. It returns an error only if the
// stream cannot go on (ctx done, or a fatal error).
func (s *eventStream) next(ctx context.Context) (httpapi.Event, error) {
	for {
		if s.br == nil {
			if s.failures > 0 {
				s.c.at(holdBackoff)
				if err := s.backoff(ctx); err != nil {
					return httpapi.Event{}, err
				}
			}
			s.c.at(holdConnect)
			err := s.connect(ctx)
			switch {
			case err == nil:
			case ctx.Err() != nil:
				return httpapi.Event{}, ctx.Err()
			case status(err) == http.StatusGone:
				// The server cannot serve from: list again, at once.
				s.c.logger.Info("remote: change stream: listing again", "table", s.table, "from", s.from, "reason", err)
				s.from, s.instance = 0, ""
				continue
			case fatal(err):
				return httpapi.Event{}, err
			default:
				s.failures++
				s.c.logger.Info("remote: change stream: reconnecting", "table", s.table, "from", s.from, "error", err)
				continue
			}
			if s.from == 0 {
				s.listing = true
				return httpapi.Event{Kind: EventRelist}, nil
			}
		}
		line, err := s.br.ReadBytes('\n')
		if err != nil {
			s.disconnect()
			if ctx.Err() != nil {
				return httpapi.Event{}, ctx.Err()
			}
			s.failures++
			s.c.logger.Info("remote: change stream: reconnecting", "table", s.table, "from", s.from, "error", err)
			continue
		}
		var ev httpapi.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return ev, fmt.Errorf("table %q: change stream: %w: %v", s.table, ErrProtocol, err)
		}
		s.c.at(holdEvent)
		s.failures = 0
		switch ev.Kind {
		case httpapi.EventUpsert, httpapi.EventDelete:
			if !s.listing {
				s.from = ev.Revision
			}
		case httpapi.EventBookmark:
			s.from, s.listing = ev.Revision, false
		case httpapi.EventProblem:
			// The server ends the stream: a consumer too slow, a server
			// shutting down. Resume, or list again if the listing was cut.
			s.disconnect()
			s.failures = 1
			if ev.Problem != nil && ev.Problem.Status == http.StatusGone {
				s.from = 0
			}
			continue
		default:
			return ev, fmt.Errorf("table %q: change stream: %w: event of kind %q", s.table, ErrProtocol, ev.Kind)
		}
		return ev, nil
	}
}

// connect opens the stream from s.from.
func (s *eventStream) connect(ctx context.Context) error {
	v := url.Values{"from": {strconv.FormatUint(s.from, 10)}}
	if s.from > 0 && s.instance != "" {
		v.Set("instance", s.instance)
	}
	resp, err := s.c.request(ctx, http.MethodGet, "tables/"+url.PathEscape(s.table)+"/changes", v, nil, "Accept", "application/x-ndjson")
	if err != nil {
		return err
	}
	s.instance = resp.Header.Get("Strata-Instance")
	s.body, s.br = resp.Body, bufio.NewReaderSize(resp.Body, 64<<10)
	return nil
}

func (s *eventStream) disconnect() {
	if s.body != nil {
		s.body.Close()
	}
	s.body, s.br = nil, nil
}

// lineBuffered reports whether a whole event is buffered: next will not
// wait for the network.
func (s *eventStream) lineBuffered() bool {
	if s.br == nil || s.br.Buffered() == 0 {
		return false
	}
	b, _ := s.br.Peek(s.br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// backoff waits before a reconnect: from the client's minimum, doubling
// with each failure up to its maximum, with jitter.
func (s *eventStream) backoff(ctx context.Context) error {
	d := s.c.minBackoff << min(s.failures-1, 20)
	if d > s.c.maxBackoff || d <= 0 {
		d = s.c.maxBackoff
	}
	d = d/2 + rand.N(d/2+1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fatal reports whether err ends a change stream: an error of the
// server's that retrying cannot mend, or an address that is not one.
func fatal(err error) bool {
	if errors.Is(err, ErrAddress) {
		return true
	}
	switch st := status(err); {
	case st == http.StatusRequestTimeout || st == http.StatusTooManyRequests:
		return false
	case st >= 400 && st < 500:
		return true
	}
	return false
}
