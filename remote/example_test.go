package remote_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/remote"
)

type Host struct {
	Name string
	Zone string
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

// serve starts a database of hosts served over HTTP, as the first process
// would.
func serve() (db *strata.DB, hosts strata.RWTable[*Host], url string, stop func()) {
	db = strata.New()
	hosts = strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	wtxn := db.WriteTxn(hosts)
	for _, h := range []*Host{{"a1", "eu"}, {"a2", "eu"}, {"b1", "us"}} {
		if _, _, err := hosts.Insert(wtxn, h); err != nil {
			panic(err)
		}
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	h := httpapi.New(db, httpapi.Options{})
	srv := httptest.NewServer(h)
	return db, hosts, srv.URL, func() { srv.CloseClientConnections(); h.Close(); srv.Close() }
}

// A second process reads the first's hosts by any index.
func Example() {
	_, _, url, stop := serve()
	defer stop()
	c, err := remote.New(url)
	if err != nil {
		panic(err)
	}
	hosts := remote.NewTable[*Host](c, "hosts")
	ctx := context.Background()
	for h, err := range hosts.List(ctx, "zone", "eu") {
		if err != nil {
			panic(err)
		}
		fmt.Println(h.Name, "is in", h.Zone)
	}
	for _, err := range hosts.List(ctx, "rack", "r1") {
		fmt.Println(err)
	}
	// Output:
	// a1 is in eu
	// a2 is in eu
	// table "hosts": index "rack": index not found
}

// A mirror keeps a local table, with indexes of its own, equal to the
// remote one.
func ExampleMirror() {
	remoteDB, remoteHosts, url, stop := serve()
	defer stop()
	c, _ := remote.New(url, remote.WithLogger(slog.New(slog.DiscardHandler)))

	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	m, err := remote.NewMirror(remote.NewTable[*Host](c, "hosts"), db, hosts)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()

	_, initialized := hosts.Initialized(db.ReadTxn())
	<-initialized
	_, _, watch, _ := hosts.GetWatch(db.ReadTxn(), hostByName.Query("b1"))
	fmt.Println(hosts.NumObjects(db.ReadTxn()), "hosts mirrored")

	wtxn := remoteDB.WriteTxn(remoteHosts)
	if _, _, err := remoteHosts.Insert(wtxn, &Host{"b1", "eu"}); err != nil {
		panic(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	<-watch // the local object changed
	for h := range hosts.List(db.ReadTxn(), hostByZone.Query("eu")) {
		fmt.Println(h.Name, "is in", h.Zone)
	}
	cancel()
	fmt.Println(<-done)
	// Output:
	// 3 hosts mirrored
	// a1 is in eu
	// a2 is in eu
	// b1 is in eu
	// <nil>
}

// A tool that does not know the objects' type reads them as the server
// encodes them, and follows a table's changes.
func ExampleClient_Changes() {
	db, hosts, url, stop := serve()
	defer stop()
	c, _ := remote.New(url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	for o, err := range c.Objects(ctx, "hosts", remote.Query{Index: "zone", Op: strata.QueryList, Key: "us"}) {
		if err != nil {
			panic(err)
		}
		fmt.Println(o.Key, string(o.Object))
	}
	for ev, err := range c.Changes(ctx, "hosts", 0) {
		if err != nil {
			panic(err)
		}
		fmt.Println(ev.Kind, ev.Key, ev.Revision)
		if ev.Kind == httpapi.EventBookmark {
			wtxn := db.WriteTxn(hosts)
			if _, _, err := hosts.Delete(wtxn, &Host{Name: "a1"}); err != nil {
				panic(err)
			}
			if _, err := wtxn.Commit(); err != nil {
				panic(err)
			}
		}
		if ev.Kind == httpapi.EventDelete {
			break
		}
	}
	// Output:
	// b1 {"Name":"b1","Zone":"us"}
	// relist  0
	// upsert a1 1
	// upsert a2 2
	// upsert b1 3
	// bookmark  3
	// delete a1 4
}
