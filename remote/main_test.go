package remote

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type Host struct {
	Name string
	Zone string
	Up   bool `json:",omitempty"`
}

var (
	hostByName = strata.Index[*Host, string]{
		Name:       "name",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	hostByZone = strata.Index[*Host, string]{
		Name:       "zone",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Zone)) },
		FromKey:    index.String,
	}
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// server is a database served by httpapi behind a switch: restart
// replaces the database and handler (a new instance, as a restarted
// process), and gate refuses every request with 503 while it is set.
type server struct {
	t     testing.TB
	opts  httpapi.Options
	db    *strata.DB
	hosts strata.RWTable[*Host]
	h     *httpapi.Handler
	cur   atomic.Pointer[httpapi.Handler]
	gate  atomic.Bool
	srv   *httptest.Server
}

func newServer(t testing.TB, opts httpapi.Options) *server {
	t.Helper()
	opts.Logger = quiet
	s := &server{t: t, opts: opts}
	s.start()
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.gate.Load() {
			http.Error(w, "gated", http.StatusServiceUnavailable)
			return
		}
		s.cur.Load().ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.h.Close()
		s.srv.Close()
	})
	return s
}

// start makes a new database and handler.
func (s *server) start() {
	s.db = strata.New()
	s.hosts = strata.MustNewTable(s.db, "hosts", hostByName, hostByZone)
	s.h = httpapi.New(s.db, s.opts)
	s.cur.Store(s.h)
}

// restart replaces the database and its handler, and cuts the
// connections to the old one.
func (s *server) restart() {
	old := s.h
	s.start()
	old.Close()
	s.srv.CloseClientConnections()
}

func (s *server) client(t testing.TB, opts ...Option) *Client {
	t.Helper()
	c, err := New(s.srv.URL, append([]Option{WithLogger(quiet), WithBackoff(time.Millisecond, 20*time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (s *server) insert(hosts ...*Host) strata.Revision {
	s.t.Helper()
	wtxn := s.db.WriteTxn(s.hosts)
	for _, h := range hosts {
		if _, _, err := s.hosts.Insert(wtxn, h); err != nil {
			s.t.Fatal(err)
		}
	}
	txn, err := wtxn.Commit()
	if err != nil {
		s.t.Fatal(err)
	}
	return s.hosts.Revision(txn)
}

func (s *server) remove(names ...string) strata.Revision {
	s.t.Helper()
	wtxn := s.db.WriteTxn(s.hosts)
	for _, n := range names {
		if _, _, err := s.hosts.Delete(wtxn, &Host{Name: n}); err != nil {
			s.t.Fatal(err)
		}
	}
	txn, err := wtxn.Commit()
	if err != nil {
		s.t.Fatal(err)
	}
	return s.hosts.Revision(txn)
}

// contents returns the server's hosts by name.
func (s *server) contents() map[string]Host {
	m := map[string]Host{}
	for h := range s.hosts.All(s.db.ReadTxn()) {
		m[h.Name] = *h
	}
	return m
}

func sixHosts() []*Host {
	var hs []*Host
	for _, z := range []struct{ prefix, zone string }{{"a", "eu"}, {"b", "us"}} {
		for i := 1; i <= 3; i++ {
			hs = append(hs, &Host{Name: fmt.Sprint(z.prefix, i), Zone: z.zone})
		}
	}
	return hs
}

// mustCommit commits txn and returns the new snapshot, failing the test if
// the commit fails.
func mustCommit(t testing.TB, txn strata.WriteTxn) strata.ReadTxn {
	t.Helper()
	rtxn, err := txn.Commit()
	if err != nil {
		t.Fatalf("Commit: %v", err)
	}
	return rtxn
}

func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// ringTookAll waits until the server's change feed (the one filling the
// ring of its streams) has read every change of the table.
func (s *server) ringTookAll(t testing.TB) {
	t.Helper()
	eventually(t, "the ring to take the changes", func() bool {
		st := strata.AnyTable{Meta: s.hosts}.FeedStats(s.db.ReadTxn())
		return st.Feeds == 1 && st.Lag == 0
	})
}
