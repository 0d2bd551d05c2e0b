package replicate_test

import (
	"context"
	"fmt"
	"net"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/replicate"
)

// A cluster of one member started by StartServer on loopback TCP: it
// leads at once, and writes through its node. With more members, each
// runs the same, its own ID and addresses among the same Peers.
func ExampleStartServer() {
	dir, err := os.MkdirTemp("", "replicate-server")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	raftAddr, fwdAddr := loopbackAddr(), loopbackAddr()

	db := strata.New()
	hosts, err := strata.NewTable(db, "hosts", hostByName)
	if err != nil {
		panic(err)
	}
	srv, err := replicate.StartServer(replicate.ServerConfig{
		ID: "n1", NodeNumber: 1, Dir: dir, RaftAddr: raftAddr, ForwardAddr: fwdAddr,
		Peers: []replicate.Peer{{ID: "n1", RaftAddr: raftAddr, ForwardAddr: fwdAddr}},
		DB:    db, Tables: []replicate.Binding{replicate.Bind(hosts, persist.JSON[*Host]())},
		Logger: hclog.NewNullLogger(),
	})
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := srv.Close(context.Background()); err != nil {
			panic(err)
		}
	}()
	ctx := context.Background()
	if _, _, err := srv.Node().WaitLeader(ctx); err != nil {
		panic(err)
	}
	_, err = srv.Node().Write(ctx, []strata.TableMeta{hosts}, func(txn strata.WriteTxn) error {
		_, _, err := hosts.Insert(txn, &Host{Name: "a", Zone: "z1"})
		return err
	})
	if err != nil {
		panic(err)
	}
	for h := range hosts.All(db.ReadTxn()) {
		fmt.Println(h.Name, h.Zone)
	}
	// Output:
	// a z1
}

// loopbackAddr returns a loopback address whose port was free a moment
// ago.
func loopbackAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
