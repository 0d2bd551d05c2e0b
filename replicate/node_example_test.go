package replicate_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/replicate"
)

type Host struct {
	Name string
	Zone string
}

var hostByName = strata.Index[*Host, string]{
	Name:       "name",
	FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// A one-node cluster: a table bound with a JSON codec, a write through
// the node, and the raft index it committed at.
func ExampleNode() {
	dir, err := os.MkdirTemp("", "replicate-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	store, err := replicate.Open(dir, replicate.Options{})
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := store.Close(); err != nil {
			panic(err)
		}
	}()
	addr, trans := raft.NewInmemTransport("")
	defer func() {
		if err := trans.Close(); err != nil {
			panic(err)
		}
	}()

	db := strata.New()
	hosts, err := strata.NewTable(db, "hosts", hostByName)
	if err != nil {
		panic(err)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.Logger = hclog.NewNullLogger()
	node, err := replicate.NewNode(replicate.Config{
		DB: db, Tables: []replicate.Binding{replicate.Bind(hosts, persist.JSON[*Host]())},
		NodeNumber: 1, Raft: conf, LogStore: store, StableStore: store,
		Snapshots: raft.NewInmemSnapshotStore(), Transport: trans,
	})
	if err != nil {
		panic(err)
	}
	defer func() {
		if err := node.Close(); err != nil {
			panic(err)
		}
	}()
	err = node.Raft().BootstrapCluster(raft.Configuration{Servers: []raft.Server{{ID: "n1", Address: addr}}}).Error()
	if err != nil {
		panic(err)
	}
	for node.Raft().State() != raft.Leader {
		time.Sleep(time.Millisecond)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	index, err := node.Write(ctx, []strata.TableMeta{hosts}, func(txn strata.WriteTxn) error {
		_, _, err := hosts.Insert(txn, &Host{Name: "a1", Zone: "eu"})
		return err
	})
	if err != nil {
		panic(err)
	}
	h, rev, _ := hosts.Get(db.ReadTxn(), hostByName.Query("a1"))
	fmt.Println(h.Name, h.Zone, "revision", rev, "applied", node.AppliedIndex() >= index)
	// Output: a1 eu revision 1 applied true
}
