package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

func names(t testing.TB, seq func(func(*Host, error) bool)) []string {
	t.Helper()
	out := []string{}
	for h, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name)
	}
	return out
}

// TestReads: the typed reads of every op, on both indexes, with text and
// raw keys, and Read's revision.
func TestReads(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	rev := s.insert(sixHosts()...)
	hosts := NewTable[*Host](s.client(t), "hosts")
	ctx := t.Context()
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"Get", names(t, hosts.Get(ctx, "", "a2")), []string{"a2"}},
		{"Get none", names(t, hosts.Get(ctx, "name", "zz")), []string{}},
		{"Get zone", names(t, hosts.Get(ctx, "zone", "us")), []string{"b1"}},
		{"List", names(t, hosts.List(ctx, "zone", "eu")), []string{"a1", "a2", "a3"}},
		{"Prefix", names(t, hosts.Prefix(ctx, "", "b")), []string{"b1", "b2", "b3"}},
		{"LowerBound", names(t, hosts.LowerBound(ctx, "", "a3")), []string{"a3", "b1", "b2", "b3"}},
		{"Range", names(t, hosts.Range(ctx, "", "a2", "b2")), []string{"a2", "a3", "b1"}},
		{"All", names(t, hosts.All(ctx)), []string{"a1", "a2", "a3", "b1", "b2", "b3"}},
		{"raw", names(t, hosts.Query(ctx, Query{Index: "zone", Op: strata.QueryPrefix, RawKey: []byte("u")})), []string{"b1", "b2", "b3"}},
		{"raw range", names(t, hosts.Query(ctx, Query{Op: strata.QueryRange, RawKey: []byte("a"), RawTo: []byte("a3")})), []string{"a1", "a2"}},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	res, err := hosts.Read(ctx, Query{Index: "zone", Op: strata.QueryList, Key: "us"})
	if err != nil || res.Revision != rev || len(res.Objects) != 3 || res.Objects[2].Name != "b3" {
		t.Fatalf("Read: %+v, %v", res, err)
	}
	// A loop may stop early.
	for h, err := range hosts.All(ctx) {
		if err != nil || h.Name != "a1" {
			t.Fatalf("first: %v, %v", h, err)
		}
		break
	}

	// Pages, untyped.
	c := hosts.Client()
	var got []string
	after := ""
	for {
		p, err := c.Page(ctx, "hosts", Query{}, 4, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Objects {
			got = append(got, o.Key)
		}
		if after = p.Next; after == "" {
			break
		}
	}
	if len(got) != 6 {
		t.Fatalf("pages: %v", got)
	}
	if obj, found, err := c.Object(ctx, "hosts", Query{Key: "b2"}); err != nil || !found || obj.Key != "b2" || obj.Revision != rev {
		t.Fatalf("Object b2: %+v %v %v", obj, found, err)
	}
	if _, found, err := c.Object(ctx, "hosts", Query{Key: "zz"}); err != nil || found {
		t.Fatalf("Object zz: %v %v", found, err)
	}
}

// TestErrors: the server's errors match the error values it met; a
// server out of reach is ErrUnreachable; a type that cannot hold the
// objects is ErrObject.
func TestErrors(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	s.insert(sixHosts()...)
	c := s.client(t)
	ctx := t.Context()
	first := func(seq func(func(*Host, error) bool)) error {
		for _, err := range seq {
			return err
		}
		return nil
	}
	nope := NewTable[*Host](c, "nope")
	hosts := NewTable[*Host](c, "hosts")
	for _, tc := range []struct {
		err    error
		want   error
		status int
	}{
		{first(nope.All(ctx)), strata.ErrTableNotFound, 404},
		{first(nope.Get(ctx, "", "a")), strata.ErrTableNotFound, 404},
		{first(hosts.List(ctx, "nope", "a")), strata.ErrIndexNotFound, 404},
		{first(hosts.Query(ctx, Query{Op: 99})), strata.ErrInvalidQuery, 0},
		{first(changeObjects(nope.Changes(ctx, 0))), strata.ErrTableNotFound, 0},
	} {
		var e *Error
		if !errors.Is(tc.err, tc.want) || tc.status != 0 && (!errors.As(tc.err, &e) || e.Status != tc.status || e.Problem.Error == "") {
			t.Errorf("%v: want %v, status %d", tc.err, tc.want, tc.status)
		}
	}
	_, err := c.Table(ctx, "nope")
	if !errors.Is(err, strata.ErrTableNotFound) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Table(nope): %v", err)
	}

	ints := NewTable[int](c, "hosts")
	var objErrs int
	for _, err := range ints.All(ctx) {
		if !errors.Is(err, ErrObject) {
			t.Fatalf("decoding a host as an int: %v", err)
		}
		objErrs++
	}
	if objErrs != 6 {
		t.Fatalf("%d object errors, want one per object", objErrs)
	}
	if _, err := ints.Read(ctx, Query{}); !errors.Is(err, ErrObject) {
		t.Fatalf("Read into ints: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	gone, _ := New("http://" + addr)
	if _, err := gone.Summary(ctx); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("a closed port: %v", err)
	}
	for _, bad := range []string{"ftp://x", "localhost:80", "unix://", "unix:", "http://", "%zz"} {
		if _, err := New(bad); !errors.Is(err, ErrAddress) {
			t.Errorf("New(%q): %v", bad, err)
		}
	}
	if ChangeRelist.String() != "relist" || ChangeKind(0).String() != "ChangeKind(0)" {
		t.Fatal("ChangeKind.String")
	}
}

// changeObjects adapts a change iterator to first's argument.
func changeObjects(seq iter.Seq2[Change[*Host], error]) func(func(*Host, error) bool) {
	return func(yield func(*Host, error) bool) {
		for ch, err := range seq {
			if !yield(ch.Object, err) {
				return
			}
		}
	}
}

// TestAddresses: a handler mounted under a path, and one on a unix
// socket.
func TestAddresses(t *testing.T) {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName)
	wtxn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(wtxn, &Host{Name: "a1"}); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, wtxn)
	h := httpapi.New(db, httpapi.Options{Logger: quiet})
	defer h.Close()

	mux := http.NewServeMux()
	mux.Handle("/debug/strata/", http.StripPrefix("/debug/strata", h))
	srv := &http.Server{Handler: mux}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "strata.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	usrv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()   // ErrServerClosed, once the test closes it
	go func() { _ = usrv.Serve(ul) }() // ErrServerClosed, once the test closes it
	defer srv.Close()
	defer usrv.Close()

	// sock is absolute: "unix://" + sock is the URL form, "unix:" + sock
	// the form a server prints.
	for _, addr := range []string{"http://" + l.Addr().String() + "/debug/strata", "http://" + l.Addr().String() + "/debug/strata/", "unix://" + sock, "unix:" + sock} {
		c, err := New(addr)
		if err != nil {
			t.Fatal(err)
		}
		got := names(t, NewTable[*Host](c, "hosts").All(t.Context()))
		if !slices.Equal(got, []string{"a1"}) {
			t.Errorf("%s: %v", addr, got)
		}
		s, err := c.Summary(t.Context())
		if err != nil || len(s.Tables) != 1 || s.Instance != h.Instance() {
			t.Errorf("%s: summary %+v, %v", addr, s, err)
		}
	}
}

// TestWait: a blocking read returns when its result changes, with the
// new result and revision, or at its timeout with the same.
func TestWait(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	s.insert(sixHosts()...)
	hosts := NewTable[*Host](s.client(t), "hosts")
	q := Query{Index: "zone", Op: strata.QueryList, Key: "us"}
	res, err := hosts.Read(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	same, err := hosts.Wait(t.Context(), q, res.Revision, 50*time.Millisecond)
	if err != nil || same.Revision != res.Revision || len(same.Objects) != 3 || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("Wait that times out: %+v, %v after %v", same, err, time.Since(start))
	}
	done := make(chan Result[*Host])
	go func() {
		r, err := hosts.Wait(t.Context(), q, res.Revision, time.Minute)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(10 * time.Millisecond)
	rev := s.insert(&Host{Name: "b4", Zone: "us"})
	r := <-done
	if r.Revision != rev || len(r.Objects) != 4 || r.Objects[3].Name != "b4" {
		t.Fatalf("woken Wait: %+v", r)
	}
	page, err := hosts.Client().Wait(t.Context(), "hosts", q, 1, 0)
	if err != nil || page.Revision != rev {
		t.Fatalf("untyped Wait at an old revision: %+v %v", page, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	if _, err := hosts.Wait(ctx, q, rev, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled Wait: %v", err)
	}
}

// TestDownloadsAndWrites: the dump, the snapshot, inserts and deletes,
// with the accesses the server grants.
func TestDownloadsAndWrites(t *testing.T) {
	s := newServer(t, httpapi.Options{
		Authorize: httpapi.Allow(httpapi.AccessRead, httpapi.AccessSnapshot, httpapi.AccessWrite),
		Snapshot:  func(w io.Writer, txn strata.ReadTxn) error { return strata.WriteJSON(w, txn, "hosts") },
	})
	s.insert(sixHosts()...)
	c := s.client(t)
	var dump bytes.Buffer
	if err := c.Dump(t.Context(), &dump, "hosts"); err != nil {
		t.Fatal(err)
	}
	var m map[string][]Host
	if err := json.Unmarshal(dump.Bytes(), &m); err != nil || len(m["hosts"]) != 6 {
		t.Fatalf("dump: %v %s", err, dump.Bytes())
	}
	var snap bytes.Buffer
	if err := c.Snapshot(t.Context(), &snap); err != nil || !bytes.Equal(snap.Bytes(), dump.Bytes()) {
		t.Fatalf("snapshot: %v", err)
	}
	hosts := NewTable[*Host](c, "hosts")
	rev, err := hosts.Insert(t.Context(), &Host{Name: "c1", Zone: "ap"}, &Host{Name: "c2", Zone: "ap"})
	if err != nil || rev != 8 {
		t.Fatalf("Insert: %d %v", rev, err)
	}
	if rev, err = hosts.Delete(t.Context(), "c1"); err != nil || rev != 9 {
		t.Fatalf("Delete: %d %v", rev, err)
	}
	if _, err = hosts.Delete(t.Context(), "c1"); !errors.Is(err, strata.ErrObjectNotFound) {
		t.Fatalf("Delete of a missing object: %v", err)
	}
	if got := names(t, hosts.Prefix(t.Context(), "", "c")); !slices.Equal(got, []string{"c2"}) {
		t.Fatalf("after the writes: %v", got)
	}

	ro := newServer(t, httpapi.Options{})
	if _, err := NewTable[*Host](ro.client(t), "hosts").Insert(t.Context(), &Host{Name: "x"}); !errors.Is(err, httpapi.ErrForbidden) {
		t.Fatalf("Insert without write access: %v", err)
	}
	if err := ro.client(t).Snapshot(t.Context(), io.Discard); !errors.Is(err, httpapi.ErrForbidden) {
		t.Fatalf("Snapshot without access: %v", err)
	}
}

// TestCloseIdleConnections: a client done with its server closes the
// connection it kept for its next request, on TCP and on a unix socket,
// and can still make requests afterwards.
func TestCloseIdleConnections(t *testing.T) {
	db := strata.New()
	strata.MustNewTable(db, "hosts", hostByName)
	h := httpapi.New(db, httpapi.Options{Logger: quiet})
	defer h.Close()
	var closed atomic.Int32
	srv := func(network, addr string) net.Listener {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		s := &http.Server{Handler: h, ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed {
				closed.Add(1)
			}
		}}
		go func() { _ = s.Serve(l) }() // ErrServerClosed, once the cleanup closes it
		t.Cleanup(func() { s.Close() })
		return l
	}
	tcp := srv("tcp", "127.0.0.1:0")
	sock := filepath.Join(t.TempDir(), "strata.sock")
	srv("unix", sock)
	for _, addr := range []string{"http://" + tcp.Addr().String(), "unix://" + sock} {
		closed.Store(0)
		c, err := New(addr, WithHTTPClient(&http.Client{Transport: &http.Transport{}}))
		if err != nil {
			t.Fatal(err)
		}
		for want := int32(1); want <= 2; want++ {
			if _, err := c.Tables(t.Context()); err != nil {
				t.Fatalf("%s: request %d: %v", addr, want, err)
			}
			if n := closed.Load(); n != want-1 {
				t.Fatalf("%s: %d connections closed before CloseIdleConnections, want %d", addr, n, want-1)
			}
			c.CloseIdleConnections()
			eventually(t, "the server to see the connection closed", func() bool { return closed.Load() == want })
		}
	}
}

// TestSocketPath: both forms of a unix socket address, and what is not one.
func TestSocketPath(t *testing.T) {
	for _, c := range []struct {
		addr, path string
		ok         bool
	}{
		{"unix:///run/app.sock", "/run/app.sock", true},
		{"unix:/run/app.sock", "/run/app.sock", true},
		{"unix:app.sock", "app.sock", true},
		{"unix://app.sock", "app.sock", true},
		{"unix:", "", true},
		{"unix://", "", true},
		{"http://host:80", "", false},
		{"/run/app.sock", "", false},
	} {
		if path, ok := SocketPath(c.addr); path != c.path || ok != c.ok {
			t.Errorf("SocketPath(%q) = %q, %v; want %q, %v", c.addr, path, ok, c.path, c.ok)
		}
	}
}
