package remote

import (
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
)

// Server is the object of the combined reads' tests.
type Server struct {
	Name   string
	Zone   string
	Status string
	Tags   []string `json:",omitempty"`
	Net    netip.Prefix
}

var (
	serverByName = strata.Index[*Server, string]{
		Name:       "name",
		FromObject: func(s *Server) index.KeySet { return index.NewKeySet(index.String(s.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	serverByZone = strata.Index[*Server, string]{
		Name:       "zone",
		FromObject: func(s *Server) index.KeySet { return index.NewKeySet(index.String(s.Zone)) },
		FromKey:    index.String,
	}
	serverByStatus = strata.Index[*Server, string]{
		Name:       "status",
		FromObject: func(s *Server) index.KeySet { return index.NewKeySet(index.String(s.Status)) },
		FromKey:    index.String,
	}
	serverByTags = strata.Index[*Server, string]{
		Name:       "tags",
		FromObject: func(s *Server) index.KeySet { return index.StringSlice(s.Tags) },
		FromKey:    index.String,
	}
	serverByNet = strata.LPMIndex[*Server]{
		Name:       "net",
		FromObject: func(s *Server) strata.PrefixSet { return strata.NewPrefixSet(s.Net) },
	}
)

// servers registers the servers table in s's database with s1..s5:
//
//	s1 eu up   [x]
//	s2 us down [x y]
//	s3 eu down [y]
//	s4 ap up   []
//	s5 us up   [y x]
func (s *server) servers() (strata.RWTable[*Server], strata.Revision) {
	s.t.Helper()
	tbl := strata.MustNewTable(s.db, "servers", serverByName, serverByZone, serverByStatus, serverByTags, serverByNet)
	return tbl, s.writeServers(tbl,
		&Server{Name: "s1", Zone: "eu", Status: "up", Tags: []string{"x"}},
		&Server{Name: "s2", Zone: "us", Status: "down", Tags: []string{"x", "y"}},
		&Server{Name: "s3", Zone: "eu", Status: "down", Tags: []string{"y"}},
		&Server{Name: "s4", Zone: "ap", Status: "up"},
		&Server{Name: "s5", Zone: "us", Status: "up", Tags: []string{"y", "x"}},
	)
}

func (s *server) writeServers(tbl strata.RWTable[*Server], servers ...*Server) strata.Revision {
	s.t.Helper()
	wtxn := s.db.WriteTxn(tbl)
	for _, sv := range servers {
		if !sv.Net.IsValid() {
			sv.Net = netip.MustParsePrefix("10.0.0.0/8")
		}
		if _, _, err := tbl.Insert(wtxn, sv); err != nil {
			s.t.Fatal(err)
		}
	}
	txn, err := wtxn.Commit()
	if err != nil {
		s.t.Fatal(err)
	}
	return tbl.Revision(txn)
}

// kq is a key query of index ix.
func kq(ix, key string) Query { return Query{Index: ix, Op: strata.QueryList, Key: key} }

// serverNames returns the names of servers read, failing on an error.
func serverNames(t *testing.T, seq func(func(*Server, error) bool)) []string {
	t.Helper()
	var out []string
	for s, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s.Name)
	}
	return out
}

// TestCombined: Table.And, In and Or, Client.Combined and ReadCombined
// return the server's results, in their documented orders, each object
// once, with text and raw keys.
func TestCombined(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	_, rev := s.servers()
	c := s.client(t)
	ctx := t.Context()
	servers := NewTable[*Server](c, "servers")

	for _, tc := range []struct {
		op   Combine
		qs   []Query
		want []string
	}{
		{CombineAnd, []Query{kq("zone", "eu"), kq("status", "down")}, []string{"s3"}},
		{CombineAnd, []Query{kq("tags", "x"), kq("tags", "y")}, []string{"s2", "s5"}},
		{CombineAnd, []Query{kq("tags", "x"), {Key: "s5"}}, []string{"s5"}},
		{CombineIn, []Query{kq("zone", "us"), kq("zone", "ap")}, []string{"s4", "s2", "s5"}},
		{CombineIn, []Query{kq("tags", "y"), kq("tags", "x")}, []string{"s1", "s2", "s5", "s3"}},
		{CombineOr, []Query{kq("zone", "ap"), kq("status", "down")}, []string{"s2", "s3", "s4"}},
		{CombineOr, []Query{kq("tags", "x"), kq("tags", "y"), kq("name", "s4")}, []string{"s1", "s2", "s3", "s4", "s5"}},
		{CombineOr, []Query{{Index: "zone", RawKey: []byte("ap")}, {Index: "status", RawKey: []byte("down")}}, []string{"s2", "s3", "s4"}},
	} {
		var got []string
		switch tc.op {
		case CombineAnd:
			got = serverNames(t, servers.And(ctx, tc.qs...))
		case CombineIn:
			got = serverNames(t, servers.In(ctx, tc.qs...))
		default:
			got = serverNames(t, servers.Or(ctx, tc.qs...))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %+v: %v, want %v", tc.op, tc.qs, got, tc.want)
		}
		var keys []string
		for o, err := range c.Combined(ctx, "servers", tc.op, tc.qs...) {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, o.Key)
		}
		if !slices.Equal(keys, tc.want) {
			t.Errorf("Client.Combined %s %+v: %v, want %v", tc.op, tc.qs, keys, tc.want)
		}
		res, err := servers.ReadCombined(ctx, tc.op, tc.qs...)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, o := range res.Objects {
			got = append(got, o.Name)
		}
		if !slices.Equal(got, tc.want) || res.Revision != rev {
			t.Errorf("ReadCombined %s %+v: %v at %d, want %v at %d", tc.op, tc.qs, got, res.Revision, tc.want, rev)
		}
	}
}

// TestCombinedErrors: the server's refusals match strata's errors through
// errors.Is, queries the client cannot send are refused before a request
// (strata.ErrInvalidQuery, not a *Error), and nothing changes.
func TestCombinedErrors(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	tbl, rev := s.servers()
	c := s.client(t)
	ctx := t.Context()
	servers := NewTable[*Server](c, "servers")
	for _, tc := range []struct {
		name   string
		op     Combine
		qs     []Query
		want   error
		server bool // the server refuses it: a *Error
	}{
		{"no queries", CombineAnd, nil, strata.ErrNoQueries, true},
		{"no queries", CombineIn, nil, strata.ErrNoQueries, true},
		{"unknown index", CombineOr, []Query{kq("zone", "eu"), kq("nope", "x")}, strata.ErrIndexNotFound, true},
		{"LPM index", CombineAnd, []Query{kq("zone", "eu"), kq("net", "10.0.0.0/8")}, strata.ErrInvalidQuery, true},
		{"mixed indexes", CombineIn, []Query{kq("zone", "eu"), kq("status", "up")}, strata.ErrMixedIndexes, true},
		{"unknown table", CombineOr, []Query{kq("zone", "eu")}, strata.ErrTableNotFound, true},
		{"a prefix", CombineAnd, []Query{{Index: "zone", Op: strata.QueryPrefix, Key: "e"}}, strata.ErrInvalidQuery, false},
		{"raw and text", CombineOr, []Query{{Index: "zone", RawKey: []byte("eu")}, kq("zone", "us")}, strata.ErrInvalidQuery, false},
		{"unknown combine", Combine("xor"), []Query{kq("zone", "eu")}, strata.ErrInvalidQuery, false},
	} {
		table := "servers"
		if tc.name == "unknown table" {
			table = "nope"
		}
		check := func(what string, err error) {
			t.Helper()
			var e *Error
			if !errors.Is(err, tc.want) || errors.As(err, &e) != tc.server {
				t.Errorf("%s: %s: %v (a *Error: %v), want %v (from the server: %v)", tc.name, what, err, e != nil, tc.want, tc.server)
			}
		}
		n := 0
		for _, err := range c.Combined(ctx, table, tc.op, tc.qs...) {
			check("Combined", err)
			n++
		}
		if n != 1 {
			t.Errorf("%s: Combined yielded %d times, want the error once", tc.name, n)
		}
		_, err := c.WaitCombined(ctx, table, tc.op, tc.qs, rev, time.Millisecond)
		check("WaitCombined", err)
		if table == "servers" {
			_, err = servers.ReadCombined(ctx, tc.op, tc.qs...)
			check("ReadCombined", err)
		}
	}
	if got := tbl.Revision(s.db.ReadTxn()); got != rev {
		t.Fatalf("revision %d after the bad reads, want %d", got, rev)
	}
}

// TestWaitCombined: a blocking combined read returns once a write changed
// its result, with the new result; not at the table's revision, at once.
func TestWaitCombined(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	tbl, rev := s.servers()
	c := s.client(t)
	ctx := t.Context()
	servers := NewTable[*Server](c, "servers")
	qs := []Query{kq("zone", "ap"), kq("status", "down")}

	done := make(chan Result[*Server], 1)
	errc := make(chan error, 1)
	go func() {
		res, err := servers.WaitCombined(ctx, CombineAnd, qs, rev, 10*time.Second)
		errc <- err
		done <- res
	}()
	select {
	case err := <-errc:
		t.Fatalf("WaitCombined returned before a write: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	rev2 := s.writeServers(tbl, &Server{Name: "s4", Zone: "ap", Status: "down"})
	select {
	case err := <-errc:
		res := <-done
		if err != nil || len(res.Objects) != 1 || res.Objects[0].Name != "s4" || res.Revision != rev2 {
			t.Fatalf("WaitCombined: %+v, %v; want s4 at %d", res, err, rev2)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitCombined did not return after the write")
	}

	p, err := c.WaitCombined(ctx, "servers", CombineOr, qs, rev, 10*time.Second)
	if err != nil || p.Revision != rev2 || len(p.Objects) != 3 {
		t.Fatalf("WaitCombined at an older revision: %+v, %v; want 3 objects at once, at %d", p, err, rev2)
	}
}
