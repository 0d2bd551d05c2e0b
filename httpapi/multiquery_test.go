package httpapi

import (
	"encoding/base64"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// Server is the object of the combined queries' tests: indexes of one
// key (zone, status, rack), of several (tags), and an LPM index (net).
type Server struct {
	Name   string
	Zone   string
	Status string
	Tags   []string `json:",omitempty"`
	Rack   int
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
	serverByRack = strata.Index[*Server, int]{
		Name:       "rack",
		FromObject: func(s *Server) index.KeySet { return index.NewKeySet(index.Int(s.Rack)) },
		FromKey:    index.Int,
	}
	serverByNet = strata.LPMIndex[*Server]{
		Name: "net",
		FromObject: func(s *Server) strata.PrefixSet {
			if !s.Net.IsValid() {
				return strata.NewPrefixSet()
			}
			return strata.NewPrefixSet(s.Net)
		},
	}
)

// addServers registers the servers table in db and inserts s1..s6:
//
//	s1 eu up   [x]    rack 1
//	s2 us down [x y]  rack 1
//	s3 eu down [y]    rack 2
//	s4 ap up   []     rack 2
//	s5 us up   [y x]  rack 3
//	s6 eu down [x]    rack 3
//
// It returns the table and its revision.
func addServers(t testing.TB, db *strata.DB) (strata.RWTable[*Server], strata.Revision) {
	t.Helper()
	tbl := strata.MustNewTable(db, "servers", serverByName, serverByZone, serverByStatus, serverByTags, serverByRack, serverByNet)
	return tbl, writeServers(t, db, tbl, multiServers()...)
}

func multiServers() []*Server {
	net := netip.MustParsePrefix("10.0.0.0/8")
	return []*Server{
		{Name: "s1", Zone: "eu", Status: "up", Tags: []string{"x"}, Rack: 1, Net: net},
		{Name: "s2", Zone: "us", Status: "down", Tags: []string{"x", "y"}, Rack: 1, Net: net},
		{Name: "s3", Zone: "eu", Status: "down", Tags: []string{"y"}, Rack: 2, Net: net},
		{Name: "s4", Zone: "ap", Status: "up", Rack: 2, Net: net},
		{Name: "s5", Zone: "us", Status: "up", Tags: []string{"y", "x"}, Rack: 3, Net: net},
		{Name: "s6", Zone: "eu", Status: "down", Tags: []string{"x"}, Rack: 3, Net: net},
	}
}

// writeServers commits servers and returns the table's revision.
func writeServers(t testing.TB, db *strata.DB, tbl strata.RWTable[*Server], servers ...*Server) strata.Revision {
	t.Helper()
	wtxn := db.WriteTxn(tbl)
	for _, s := range servers {
		if _, _, err := tbl.Insert(wtxn, s); err != nil {
			t.Fatal(err)
		}
	}
	return tbl.Revision(mustCommit(t, wtxn))
}

// multiPath returns the path of a combined query of op with the q=
// values qs, escaped, and extra parameters.
func multiPath(op string, qs []string, extra ...string) string {
	v := url.Values{"q": qs}
	s := "/v1/tables/servers/" + op + "?" + v.Encode()
	for _, e := range extra {
		s += "&" + e
	}
	return s
}

// TestMultiQuery: /and, /in and /or return what strata's And, In and Or
// return, in their documented orders, each object once, at the table's
// revision, with text keys, raw keys and keys of the primary index.
func TestMultiQuery(t *testing.T) {
	f := newFixture(t, Options{})
	_, rev := addServers(t, f.db)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		op    string
		qs    []string
		extra []string
		want  []string
	}{
		// And: primary-key order.
		{"and", []string{"zone=eu", "status=down"}, nil, []string{"s3", "s6"}},
		{"and", []string{"status=down", "zone=eu", "tags=x"}, nil, []string{"s6"}},
		{"and", []string{"tags=y", "tags=x"}, nil, []string{"s2", "s5"}},
		{"and", []string{"zone=eu", "name=s3"}, nil, []string{"s3"}},
		{"and", []string{"zone=eu", "s4"}, nil, nil},
		{"and", []string{"zone=mars", "status=up"}, nil, nil},
		{"and", []string{"rack=3", "status=up"}, nil, []string{"s5"}},
		// In: the index's order, by key then primary key; an object
		// with two of the keys once, under the first.
		{"in", []string{"zone=us", "zone=ap"}, nil, []string{"s4", "s2", "s5"}},
		{"in", []string{"zone=us", "zone=eu", "zone=us"}, nil, []string{"s1", "s3", "s6", "s2", "s5"}},
		{"in", []string{"tags=y", "tags=x"}, nil, []string{"s1", "s2", "s5", "s6", "s3"}},
		{"in", []string{"s5", "=s1"}, nil, []string{"s1", "s5"}},
		{"in", []string{"rack=3", "rack=1"}, nil, []string{"s1", "s2", "s5", "s6"}},
		// Or: primary-key order, each object once.
		{"or", []string{"zone=ap", "status=down"}, nil, []string{"s2", "s3", "s4", "s6"}},
		{"or", []string{"tags=x", "tags=y", "zone=eu"}, nil, []string{"s1", "s2", "s3", "s5", "s6"}},
		{"or", []string{"s6", "zone=ap", "name=s1"}, nil, []string{"s1", "s4", "s6"}},
		{"or", []string{"zone=" + b64("ap"), "status=" + b64("down")}, []string{"raw=1"}, []string{"s2", "s3", "s4", "s6"}},
	} {
		path := multiPath(tc.op, tc.qs, tc.extra...)
		res := f.get(t, path)
		var p Page
		res.decode(t, 200, &p)
		if got := pageKeys(p); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", path, got, tc.want)
		}
		if p.Table != "servers" || p.Revision != rev || p.Next != "" || res.header.Get("Strata-Revision") != itoa(rev) {
			t.Errorf("%s: table %q, revision %d (header %q), next %q; want servers at %d", path, p.Table, p.Revision, res.header.Get("Strata-Revision"), p.Next, rev)
		}
		for _, o := range p.Objects {
			if o.Revision == 0 || !strings.Contains(string(o.Object), `"Name":"`+o.Key+`"`) {
				t.Errorf("%s: object %+v %s", path, o, o.Object)
			}
		}
	}
}

// TestMultiQueryErrors: each bad request is refused with the typed error
// (its status, and its name in the problem), reads nothing, and changes
// nothing.
func TestMultiQueryErrors(t *testing.T) {
	f := newFixture(t, Options{})
	tbl, rev := addServers(t, f.db)
	for _, tc := range []struct {
		path   string
		status int
		name   string
	}{
		{"/v1/tables/servers/and", 400, "strata.ErrNoQueries"},
		{"/v1/tables/servers/in?raw=1", 400, "strata.ErrNoQueries"},
		{"/v1/tables/servers/or", 400, "strata.ErrNoQueries"},
		{multiPath("and", []string{"zone=eu", "nope=x"}), 404, "strata.ErrIndexNotFound"},
		{multiPath("in", []string{"nope=x"}), 404, "strata.ErrIndexNotFound"},
		{multiPath("or", []string{"zone=eu", "Zone=eu"}), 404, "strata.ErrIndexNotFound"},
		{multiPath("and", []string{"zone=eu", "net=10.0.0.0/8"}), 400, "strata.ErrInvalidQuery"},
		{multiPath("in", []string{"net=10.0.0.0/8"}), 400, "strata.ErrInvalidQuery"},
		{multiPath("or", []string{"net=10.0.0.0/8", "zone=eu"}), 400, "strata.ErrInvalidQuery"},
		{multiPath("in", []string{"zone=eu", "status=up"}), 400, "strata.ErrMixedIndexes"},
		{multiPath("in", []string{"s1", "zone=eu"}), 400, "strata.ErrMixedIndexes"},
		{multiPath("and", []string{"zone=eu", "rack=one"}), 400, "index.ErrParseKey"},
		{multiPath("or", []string{"zone=e"}, "raw=1"), 400, "httpapi.ErrBadRequest"}, // "e" is no base64url
		{multiPath("or", []string{"zone=eu"}, "raw=maybe"), 400, "httpapi.ErrBadRequest"},
		{multiPath("and", []string{"zone=eu"}, "limit=1"), 400, "httpapi.ErrBadRequest"},
		{multiPath("and", []string{"zone=eu"}, "after=czE"), 400, "httpapi.ErrBadRequest"},
		{multiPath("and", []string{"zone=eu"}, "index=zone"), 400, "httpapi.ErrBadRequest"},
		{multiPath("and", []string{"zone=eu"}, "wait=1s"), 400, "httpapi.ErrBadRequest"},
		{multiPath("and", []string{"zone=eu"}, "waitRev=x"), 400, "httpapi.ErrBadRequest"},
		{multiPath("or", []string{"zone=eu"}, "raw=1", "raw=0"), 400, "httpapi.ErrBadRequest"},
		{"/v1/tables/nope/and?q=zone%3Deu", 404, "strata.ErrTableNotFound"},
	} {
		p := f.get(t, tc.path).problem(t, tc.status, tc.name)
		if !strings.Contains(p.Detail, "servers") && tc.name != "strata.ErrTableNotFound" && tc.name != "httpapi.ErrBadRequest" {
			t.Errorf("%s: %q does not name the table", tc.path, p.Detail)
		}
	}
	if got := tbl.Revision(f.db.ReadTxn()); got != rev {
		t.Fatalf("revision %d after the bad requests, want %d", got, rev)
	}
	// Only GET.
	f.do(t, "POST", "/v1/tables/servers/and?q=s1", nil).problem(t, 405, "httpapi.ErrMethodNotAllowed")
}

// TestMultiQueryBlocking: a combined read with waitRev waits on its one
// watch channel, and returns the new result once a write changed it; a
// write of another table leaves it waiting. (Which writes of the table
// itself wake it depends on its trees' shapes: a channel may close when
// the result did not change, docs/queries.md.)
func TestMultiQueryBlocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := synctestFixture(t, Options{})
		tbl, rev := addServers(t, f.db)
		for _, tc := range []struct {
			op    string
			qs    []string
			write *Server // the write that changes the result
			want  []string
		}{
			{"and", []string{"zone=ap", "status=down"},
				&Server{Name: "s4", Zone: "ap", Status: "down"}, []string{"s4"}},
			{"in", []string{"zone=ap", "zone=us"},
				&Server{Name: "s0", Zone: "ap", Status: "up"}, []string{"s0", "s4", "s2", "s5"}},
			{"or", []string{"zone=ap", "status=down"},
				&Server{Name: "s7", Zone: "ap", Status: "up"}, []string{"s0", "s2", "s3", "s4", "s6", "s7"}},
		} {
			path := multiPath(tc.op, tc.qs, "waitRev="+itoa(rev), "wait=1m")
			wait := blockingRead(t.Context(), f.h, path)
			synctest.Wait()
			if n := f.h.waiting.Load(); n != 1 {
				t.Fatalf("%s: %d blocked reads, want 1", path, n)
			}
			f.insert(t, &Host{Name: "h-" + tc.op, Zone: "ap"})
			synctest.Wait()
			if n := f.h.waiting.Load(); n != 1 {
				t.Fatalf("%s: a write of another table ended the wait", path)
			}
			rev = writeServers(t, f.db, tbl, tc.write)
			res := wait()
			var p Page
			res.decode(t, 200, &p)
			if got := pageKeys(p); !slices.Equal(got, tc.want) || p.Revision != rev {
				t.Fatalf("%s: woke with %v at %d, want %v at %d", path, got, p.Revision, tc.want, rev)
			}
		}
		// Not at the table's revision: at once; a bad query: at once,
		// with its error.
		res := blockingRead(t.Context(), f.h, multiPath("and", []string{"zone=eu"}, "waitRev="+itoa(rev-1)))()
		if res.status != 200 || res.header.Get("Strata-Revision") != itoa(rev) {
			t.Fatalf("waitRev %d: %d %s", rev-1, res.status, res.body)
		}
		res = blockingRead(t.Context(), f.h, multiPath("in", []string{"zone=eu", "status=up"}, "waitRev="+itoa(rev)))()
		res.problem(t, 400, "strata.ErrMixedIndexes")
	})
}

// TestMultiQueryDelete: DELETE on /and, /in and /or deletes what the
// combined read selects, in one transaction, and says how many; a bad
// request is refused with its typed error and deletes nothing, and so is
// a delete without write access.
func TestMultiQueryDelete(t *testing.T) {
	f := newFixture(t, Options{Authorize: Allow(AccessRead, AccessWrite)})
	tbl, rev := addServers(t, f.db)
	names := func() []string {
		var got []string
		for s := range tbl.All(f.db.ReadTxn()) {
			got = append(got, s.Name)
		}
		return got
	}
	for _, bad := range []struct {
		path   string
		status int
		name   string
	}{
		{"/v1/tables/servers/and", 400, "strata.ErrNoQueries"},
		{multiPath("in", []string{"zone=eu", "status=up"}), 400, "strata.ErrMixedIndexes"},
		{multiPath("or", []string{"nope=x"}), 404, "strata.ErrIndexNotFound"},
		{multiPath("and", []string{"zone=eu"}, "wait=1s"), 400, "httpapi.ErrBadRequest"},
	} {
		f.do(t, "DELETE", bad.path, nil).problem(t, bad.status, bad.name)
	}
	if got := names(); len(got) != 6 || tbl.Revision(f.db.ReadTxn()) != rev {
		t.Fatalf("refused deletes changed the table: %v at revision %d, was %d", got, tbl.Revision(f.db.ReadTxn()), rev)
	}
	for _, tc := range []struct {
		op   string
		qs   []string
		n    int
		left []string
	}{
		{"and", []string{"zone=eu", "status=down"}, 2, []string{"s1", "s2", "s4", "s5"}},
		{"in", []string{"zone=ap", "zone=mars"}, 1, []string{"s1", "s2", "s5"}},
		{"or", []string{"s1", "tags=y"}, 3, nil},
	} {
		var res WriteResult
		path := multiPath(tc.op, tc.qs)
		r := f.do(t, "DELETE", path, nil)
		r.decode(t, 200, &res)
		if res.Deleted != tc.n || res.Revision != tbl.Revision(f.db.ReadTxn()) || r.header.Get("Strata-Revision") != itoa(res.Revision) {
			t.Errorf("DELETE %s: %+v (header %q), want %d deleted at the table's revision %d", path, res, r.header.Get("Strata-Revision"), tc.n, tbl.Revision(f.db.ReadTxn()))
		}
		if got := names(); !slices.Equal(got, tc.left) {
			t.Errorf("after DELETE %s: %v, want %v", path, got, tc.left)
		}
	}

	ro := newFixture(t, Options{})
	addServers(t, ro.db)
	ro.do(t, "DELETE", multiPath("or", []string{"s1"}), nil).problem(t, 403, "httpapi.ErrForbidden")
}
