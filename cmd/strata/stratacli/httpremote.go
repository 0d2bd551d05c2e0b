package stratacli

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net/http"
	"strings"

	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/remote"
)

// HTTPDialer returns the Dialer of a database served by package httpapi,
// through the Go client of package remote: the one NewCommand uses unless
// WithRemote gives another. opts configure each client it makes (headers
// for the server's Authorize, an http.Client with TLS settings); by
// default each has a transport of its own, which Close shuts, and logs
// the reconnects of a watch on the command's error output.
//
// Its Remote maps the client's errors to the command's: a server that
// cannot be reached, that refuses the request (401, 403, a 5xx status),
// or that does not serve the API at addr wraps ErrConnect; a bad request
// wraps ErrUsage, with the server's problem text; the strata and index
// errors the server names (strata.ErrTableNotFound, index.ErrParseKey)
// are kept.
func HTTPDialer(opts ...remote.Option) Dialer {
	return func(ctx context.Context, addr string) (Remote, error) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		base := []remote.Option{remote.WithHTTPClient(&http.Client{Transport: tr})}
		if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
			base = append(base, remote.WithLogger(l))
		}
		c, err := remote.New(addr, append(base, opts...)...)
		if err != nil {
			return nil, &wrapped{msg: "--addr " + err.Error(), err: ErrUsage}
		}
		return &httpRemote{c: c, addr: addr}, nil
	}
}

// loggerKey is the context key under which the command passes its
// logger to the Dialer it calls (HTTPDialer's reconnect messages).
type loggerKey struct{}

// httpRemote is a Remote over package remote's client.
type httpRemote struct {
	c    *remote.Client
	addr string
}

func (r *httpRemote) Tables(ctx context.Context) (RemoteDatabase, error) {
	ts, err := r.c.Tables(ctx)
	if err != nil {
		return RemoteDatabase{}, r.fail(err)
	}
	db := RemoteDatabase{Tables: make([]RemoteTable, 0, len(ts))}
	for _, t := range ts {
		rt := RemoteTable{Name: t.Name, Objects: t.Objects, Revision: t.Revision, Initialized: t.Initialized,
			PendingInitializers: t.PendingInitializers}
		for _, ix := range t.Indexes {
			rt.Indexes = append(rt.Indexes, RemoteIndex{Name: ix.Name, Primary: ix.Primary, Unique: ix.Unique})
		}
		db.Tables = append(db.Tables, rt)
	}
	return db, nil
}

// client returns q as package remote's client takes it.
func (q RemoteQuery) client() remote.Query {
	rq := remote.Query{Index: q.Index, Op: q.Op, Key: q.Key, To: q.To}
	if q.Raw {
		// Not nil, even when empty: nil RawKey means text keys.
		rq.RawKey, rq.RawTo = append([]byte{}, q.Key...), append([]byte{}, q.To...)
	}
	return rq
}

// Query streams the result from one snapshot when it has no limit and
// no cursor; otherwise it reads one page (limit objects at most, held in
// memory) and gives its last object the page's next cursor.
func (r *httpRemote) Query(ctx context.Context, table string, q RemoteQuery) iter.Seq2[RemoteObject, error] {
	rq := q.client()
	return func(yield func(RemoteObject, error) bool) {
		if q.Limit == 0 && q.After == "" {
			for o, err := range r.c.Objects(ctx, table, rq) {
				if err != nil {
					yield(RemoteObject{}, r.fail(err))
					return
				}
				if !yield(RemoteObject{Revision: o.Revision, Key: o.Key, Object: o.Object}, nil) {
					return
				}
			}
			return
		}
		p, err := r.c.Page(ctx, table, rq, q.Limit, q.After)
		if err != nil {
			yield(RemoteObject{}, r.fail(err))
			return
		}
		for i, o := range p.Objects {
			ro := RemoteObject{Revision: o.Revision, Key: o.Key, Object: o.Object}
			if i == len(p.Objects)-1 {
				ro.Next = p.Next
			}
			if !yield(ro, nil) {
				return
			}
		}
	}
}

// Changes first reads the table's description: the client's change
// stream retries a server it cannot reach for as long as ctx lasts, which
// suits a watch that has started, not one whose address or table is
// wrong.
func (r *httpRemote) Changes(ctx context.Context, table string, from uint64) iter.Seq2[RemoteChange, error] {
	return func(yield func(RemoteChange, error) bool) {
		if _, err := r.c.Table(ctx, table); err != nil {
			if ctx.Err() == nil {
				yield(RemoteChange{}, r.fail(err))
			}
			return
		}
		for ev, err := range r.c.Changes(ctx, table, from) {
			if err != nil {
				yield(RemoteChange{}, r.fail(err))
				return
			}
			var c RemoteChange
			switch ev.Kind {
			case httpapi.EventUpsert, httpapi.EventDelete:
				c = RemoteChange{Revision: ev.Revision, Key: ev.Key, Deleted: ev.Kind == httpapi.EventDelete, Object: ev.Object}
			case remote.EventRelist:
				c = RemoteChange{Relist: true}
			default:
				continue // a bookmark: nothing to show
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// Cluster reads the server's GET /v1/cluster. A server that is not a
// cluster member is ErrNotClusterMember; one without the endpoint (no
// Strata HTTP API at the address, or one older than it) ErrConnect.
func (r *httpRemote) Cluster(ctx context.Context) (RemoteCluster, error) {
	st, err := r.c.Cluster(ctx)
	switch {
	case errors.Is(err, httpapi.ErrNotClusterMember):
		return RemoteCluster{}, &wrapped{msg: fmt.Sprintf("the database at %s is not a member of a replication cluster (its server describes none: httpapi.Options.Cluster)", r.addr),
			err: ErrNotClusterMember}
	case errors.Is(err, httpapi.ErrNotFound):
		return RemoteCluster{}, &wrapped{msg: fmt.Sprintf("%s serves no /v1/cluster: no Strata HTTP API there, or one too old to describe clusters (%v)", r.addr, err),
			err: ErrConnect}
	case err != nil:
		return RemoteCluster{}, r.fail(err)
	}
	rc := RemoteCluster{ID: st.ID, Address: st.Address, State: st.State, Term: st.Term, LeaderID: st.LeaderID,
		LeaderAddress: st.LeaderAddress, LeaderContactMillis: st.LeaderContactMillis, CommitIndex: st.CommitIndex,
		AppliedIndex: st.AppliedIndex, PublishedIndex: st.PublishedIndex, Members: make([]RemoteMember, 0, len(st.Members))}
	for _, m := range st.Members {
		rc.Members = append(rc.Members, RemoteMember{ID: m.ID, Address: m.Address, Suffrage: m.Suffrage, State: m.State,
			Leader: m.Leader, Self: m.Self, AppliedIndex: m.AppliedIndex, Lag: m.Lag,
			HeartbeatFailures: m.HeartbeatFailures, LastContactMillis: m.LastContactMillis})
	}
	return rc, nil
}

// Close closes the client's idle connections: nothing is left running.
func (r *httpRemote) Close() error {
	r.c.CloseIdleConnections()
	return nil
}

// fail maps an error of the client to the command's (see HTTPDialer).
// The cause of a connection failure is told, not wrapped: a unix socket
// that is not there is ErrConnect, not fs.ErrNotExist's "not found".
func (r *httpRemote) fail(err error) error {
	var e *remote.Error
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, remote.ErrUnreachable):
		return &wrapped{msg: fmt.Sprintf("cannot connect to %s: %v", r.addr, err), err: ErrConnect}
	case errors.Is(err, remote.ErrProtocol):
		return &wrapped{msg: fmt.Sprintf("%s does not answer as a Strata HTTP API: %v", r.addr, err), err: ErrConnect}
	case !errors.As(err, &e):
		return err
	case e.Problem.Error == "" || errors.Is(err, httpapi.ErrNotFound):
		// Not the API's answer (a proxy's page, another server), or no
		// endpoint there: the handler is not where addr says.
		return &wrapped{msg: fmt.Sprintf("no Strata HTTP API at %s (%s; an application that mounts it under a path: give the path, http://host:port/path)",
			r.addr, strings.TrimSpace(err.Error())), err: ErrConnect}
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Status >= 500:
		return &wrapped{msg: fmt.Sprintf("%s refused the request: %d %s: %v", r.addr, e.Status, http.StatusText(e.Status), err), err: ErrConnect}
	case errors.Is(err, httpapi.ErrBadRequest):
		return &wrapped{msg: err.Error(), err: errors.Join(ErrUsage, err)}
	}
	return err
}
