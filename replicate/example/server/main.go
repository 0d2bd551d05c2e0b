// Command server is the smallest complete replicated Strata program: a
// member of a three-node cluster on this machine that writes its own host
// into a replicated table, from whichever member, and prints the table as
// it changes. Run three, in three terminals:
//
//	go run ./example/server -n 1
//	go run ./example/server -n 2
//	go run ./example/server -n 3
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/replicate"
)

type Host struct{ Name, Zone string }

var hostByName = strata.Index[*Host, string]{Name: "name", Unique: true, FromKey: index.String,
	FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) }}

var peers = []replicate.Peer{
	{ID: "n1", RaftAddr: "127.0.0.1:7001", ForwardAddr: "127.0.0.1:7101"},
	{ID: "n2", RaftAddr: "127.0.0.1:7002", ForwardAddr: "127.0.0.1:7102"},
	{ID: "n3", RaftAddr: "127.0.0.1:7003", ForwardAddr: "127.0.0.1:7103"},
}

func main() {
	n := flag.Int("n", 1, "which member this is: 1, 2 or 3")
	dir := flag.String("dir", "data", "where the members keep their raft logs and snapshots")
	flag.Parse()
	if *n < 1 || *n > len(peers) {
		log.Fatalf("-n %d: want 1, 2 or 3", *n)
	}
	me := peers[*n-1]
	db := strata.New()
	hosts, err := strata.NewTable(db, "hosts", hostByName)
	if err != nil {
		log.Fatal(err)
	}
	srv, err := replicate.StartServer(replicate.ServerConfig{
		ID: me.ID, NodeNumber: uint16(*n), Dir: *dir + "/" + string(me.ID), Peers: peers,
		RaftAddr: me.RaftAddr, ForwardAddr: me.ForwardAddr,
		DB: db, Tables: []replicate.Binding{replicate.Bind(hosts, persist.JSON[*Host]())},
		Durable: true, // the tables in Pebble too: a restart replays only the log after them
	})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := srv.Close(context.Background()); err != nil {
			log.Print(err)
		}
	}()
	// Any member writes once the cluster has a leader (the other members
	// may not be up yet): a follower sends its change set to the leader,
	// which commits it unless the objects it wrote changed meanwhile.
	if _, _, err := srv.Node().WaitLeader(context.Background()); err != nil {
		log.Fatal(err)
	}
	at, err := srv.Node().Write(context.Background(), []strata.TableMeta{hosts}, func(txn strata.WriteTxn) error {
		_, _, err := hosts.Insert(txn, &Host{Name: string(me.ID), Zone: "zone-a"})
		return err
	}, replicate.ObjectConflicts())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("committed at raft index", at)
	// Every member holds every member's write, at the same revisions.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for {
		all, changed := hosts.AllWatch(db.ReadTxn())
		for h, rev := range all {
			fmt.Printf("%s in %s, revision %d\n", h.Name, h.Zone, rev)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return // Close hands the leadership over if this member leads
		}
	}
}
