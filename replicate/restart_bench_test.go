package replicate

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

var restartObjects = flag.Int("replicate.restart.objects", 20_000, "objects of BenchmarkRestart (the issue's figure is at 1,000,000)")

// restartBatch is the objects written per transaction when the
// benchmark's stores are filled.
const restartBatch = 1000

var restartVal = string(bytes.Repeat([]byte("v"), 92))

// BenchmarkRestart: a durable node that stops and starts again
// (node: NewNode on its raft log, file snapshots and persist store, until
// it returns with its tables loaded; raft's election is not in it) beside
// persist's recovery of the same objects in a store of their own
// (persist: Open and Register). The node's store was filled through raft
// (a single-node cluster, restartBatch objects per entry) and has a
// snapshot, as a node that ran for a while would; its log keeps raft's
// default trailing entries, which raft reads at start for configuration
// changes. Objects of about 100 bytes, cheap codec (snapBenchCodec).
func BenchmarkRestart(b *testing.B) {
	n := *restartObjects
	dir := b.TempDir()
	fillRestartNode(b, dir, n)
	fillRestartStore(b, filepath.Join(dir, "plain"), n)
	b.Run(fmt.Sprintf("persist/objects=%d", n), func(b *testing.B) {
		for range b.N {
			s, err := persist.Open(filepath.Join(dir, "plain"), persist.Options{Logger: slog.New(slog.DiscardHandler)})
			must(b, err)
			db := strata.New()
			tbl, err := strata.NewTable(db, "items", itemByID)
			must(b, err)
			must(b, s.Register(persist.Table(tbl, snapBenchCodec)))
			if got := tbl.NumObjects(db.ReadTxn()); got != n {
				b.Fatalf("%d objects loaded, want %d", got, n)
			}
			b.StopTimer()
			must(b, s.Close())
			b.StartTimer()
		}
	})
	b.Run(fmt.Sprintf("node/objects=%d", n), func(b *testing.B) {
		for range b.N {
			rn := openRestartNode(b, dir)
			if got := rn.tbl.NumObjects(rn.db.ReadTxn()); got != n {
				b.Fatalf("%d objects loaded, want %d", got, n)
			}
			b.StopTimer()
			rn.close(b)
			b.StartTimer()
		}
	})
}

// restartNode is a single-node cluster's node with what it opened.
type restartNode struct {
	db    *strata.DB
	tbl   strata.RWTable[*item]
	node  *Node
	logs  *LogStore
	state *persist.Store
	trans *raft.InmemTransport
}

func openRestartNode(b *testing.B, dir string) *restartNode {
	rn := &restartNode{db: strata.New()}
	var err error
	rn.tbl, err = strata.NewTable(rn.db, "items", itemByID)
	must(b, err)
	rn.logs, err = Open(filepath.Join(dir, "raft-log"), Options{})
	must(b, err)
	rn.state, err = persist.Open(filepath.Join(dir, "state"), persist.Options{Logger: slog.New(slog.DiscardHandler)})
	must(b, err)
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Off})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, logger)
	must(b, err)
	_, rn.trans = raft.NewInmemTransport("r")
	conf := testRaftConfig("r")
	conf.Logger = logger
	conf.TrailingLogs = raft.DefaultConfig().TrailingLogs
	conf.SnapshotThreshold = raft.DefaultConfig().SnapshotThreshold
	rn.node, err = NewNode(Config{
		DB: rn.db, Tables: []Binding{Bind(rn.tbl, snapBenchCodec)}, NodeNumber: 1, Raft: conf,
		LogStore: rn.logs, StableStore: rn.logs, Snapshots: snaps, Transport: rn.trans, Store: rn.state,
	})
	must(b, err)
	return rn
}

func (rn *restartNode) close(b *testing.B) {
	must(b, rn.node.Close())
	must(b, rn.trans.Close())
	must(b, rn.logs.Close())
	must(b, rn.state.Close())
}

// fillRestartNode writes n objects through a single-node cluster in dir,
// takes a snapshot, and stops it.
func fillRestartNode(b *testing.B, dir string, n int) {
	rn := openRestartNode(b, dir)
	must(b, rn.node.Bootstrap([]raft.Server{{ID: "r", Address: "r"}}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := rn.node.WaitLeader(ctx)
	must(b, err)
	for lo := 0; lo < n; lo += restartBatch {
		_, err := rn.node.Write(ctx, []strata.TableMeta{rn.tbl}, func(txn strata.WriteTxn) error {
			for i := lo; i < min(lo+restartBatch, n); i++ {
				if _, _, err := rn.tbl.Insert(txn, &item{ID: uint64(i), Val: restartVal}); err != nil {
					return err
				}
			}
			return nil
		})
		must(b, err)
	}
	must(b, rn.node.Raft().Snapshot().Error())
	rn.close(b)
}

// fillRestartStore writes the same n objects into a persist store of their
// own in dir.
func fillRestartStore(b *testing.B, dir string, n int) {
	s, err := persist.Open(dir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	must(b, err)
	db := strata.New()
	tbl, err := strata.NewTable(db, "items", itemByID)
	must(b, err)
	must(b, s.Register(persist.Table(tbl, snapBenchCodec)))
	for lo := 0; lo < n; lo += restartBatch {
		txn := db.WriteTxn(tbl)
		for i := lo; i < min(lo+restartBatch, n); i++ {
			if _, _, err := tbl.Insert(txn, &item{ID: uint64(i), Val: restartVal}); err != nil {
				b.Fatal(err)
			}
		}
		_, err := txn.Commit()
		must(b, err)
	}
	must(b, s.Close())
}
