package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/remote"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServe serves on a TCP port and on a unix socket of mode 0600; a
// client mirrors the hosts and sees the writer's changes.
func TestServe(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "strata.sock")
	for _, addr := range []string{"127.0.0.1:0", "unix:" + sock} {
		ctx, cancel := context.WithCancel(t.Context())
		addrc := make(chan net.Addr, 1)
		done := make(chan error, 1)
		go func() { done <- run(ctx, addr, func(a net.Addr) { addrc <- a }) }()
		a := <-addrc
		url := "http://" + a.String()
		if a.Network() == "unix" {
			url = "unix://" + a.String()
			if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("socket %s: %v, %v", sock, fi.Mode(), err)
			}
		}
		c, err := remote.New(url)
		if err != nil {
			t.Fatal(err)
		}
		db := strata.New()
		hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
		m, err := remote.NewMirror(remote.NewTable[*Host](c, "hosts"), db, hosts)
		if err != nil {
			t.Fatal(err)
		}
		mctx, stopMirror := context.WithCancel(t.Context())
		mirrored := make(chan error, 1)
		go func() { mirrored <- m.Run(mctx) }()
		_, initialized := hosts.Initialized(db.ReadTxn())
		<-initialized
		// The writer changes host-01 within 200ms, and again every
		// 1.2s: wait for the change to reach the mirror.
		_, _, watch, found := hosts.GetWatch(db.ReadTxn(), hostByName.Query("host-01"))
		if !found || hosts.NumObjects(db.ReadTxn()) != 12 {
			t.Fatalf("%s: %d hosts mirrored", addr, hosts.NumObjects(db.ReadTxn()))
		}
		<-watch
		stopMirror()
		if err := <-mirrored; err != nil {
			t.Fatal(err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", addr, err)
		}
	}
}
