package persist_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/remote"
)

type snapHost struct {
	Name string
	Zone string
}

var snapHostByName = strata.Index[*snapHost, string]{
	Name:       "name",
	FromObject: func(h *snapHost) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// serveSnapshots serves a database of two hosts whose /v1/snapshot is
// persist's snapshot format, with the access authorize grants.
func serveSnapshots(authorize bool) (url string, stop func()) {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", snapHostByName)
	txn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(txn, &snapHost{"a1", "eu"}); err != nil {
		panic(err)
	}
	if _, _, err := hosts.Insert(txn, &snapHost{"b1", "us"}); err != nil {
		panic(err)
	}
	if _, err := txn.Commit(); err != nil {
		panic(err)
	}

	bindings := []persist.TableBinding{persist.Table(hosts, persist.JSON[*snapHost]())}
	opts := httpapi.Options{
		Snapshot: func(w io.Writer, txn strata.ReadTxn) error {
			return persist.WriteSnapshot(w, txn, bindings...)
		},
	}
	if authorize {
		opts.Authorize = httpapi.Allow(httpapi.AccessRead, httpapi.AccessWatch, httpapi.AccessSnapshot)
	}
	h := httpapi.New(db, opts)
	srv := httptest.NewServer(h)
	return srv.URL, func() { h.Close(); srv.Close() }
}

// An application serves snapshots in persist's format over HTTP by giving
// httpapi persist.WriteSnapshot and its table bindings; a client
// downloads one and reads it into a fresh database.
func Example_httpapiSnapshot() {
	url, stop := serveSnapshots(true)
	defer stop()

	c, err := remote.New(url)
	if err != nil {
		panic(err)
	}
	var snap bytes.Buffer
	if err := c.Snapshot(context.Background(), &snap); err != nil {
		panic(err)
	}

	fresh := strata.New()
	hosts := strata.MustNewTable(fresh, "hosts", snapHostByName)
	info, err := persist.ReadSnapshot(&snap, persist.Table(hosts, persist.JSON[*snapHost]()))
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Objects, "objects")
	for h := range hosts.All(fresh.ReadTxn()) {
		fmt.Println(h.Name, h.Zone)
	}
	// Output:
	// 2 objects
	// a1 eu
	// b1 us
}

// TestHTTPAPISnapshotDenied: without the snapshot access, which httpapi
// refuses by default, no snapshot is written.
func TestHTTPAPISnapshotDenied(t *testing.T) {
	url, stop := serveSnapshots(false)
	defer stop()
	c, err := remote.New(url)
	if err != nil {
		t.Fatal(err)
	}
	var snap bytes.Buffer
	if err := c.Snapshot(t.Context(), &snap); !errors.Is(err, httpapi.ErrForbidden) || snap.Len() != 0 {
		t.Fatalf("Snapshot: %v, %d bytes", err, snap.Len())
	}
}
