// Command embed is an application that carries the strata command tree in
// its own binary, with its table types registered, so that the tree
// decodes its tables and shows their objects as columns:
//
//	embed seed --dir /tmp/embed-store -n 20      # the application's own work: 20 nodes (--nodes)
//	embed debug dump nodes --dir /tmp/embed-store --index zone --get eu
//	embed debug check --dir /tmp/embed-store
//
// The application's tables: nodes (JSON), with a secondary index by zone,
// and routes (a binary encoding of its own).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/cmd/strata/stratacli"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// Node is an object of the table nodes.
type Node struct {
	ID   uint64   `json:"id"`
	Name string   `json:"name"`
	Zone string   `json:"zone"`
	Tags []string `json:"tags,omitempty"`
}

// Route is an object of the table routes, stored in a binary encoding.
type Route struct {
	Prefix netip.Prefix `json:"prefix"`
	NodeID uint64       `json:"node"`
}

// AppendBinary appends the route's encoding: the node's id, then the
// prefix.
func (r *Route) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, r.NodeID)
	return r.Prefix.AppendBinary(b)
}

// UnmarshalBinary decodes what AppendBinary wrote.
func (r *Route) UnmarshalBinary(b []byte) error {
	if len(b) < 8 {
		return errors.New("route: short")
	}
	r.NodeID = binary.BigEndian.Uint64(b)
	return r.Prefix.UnmarshalBinary(b[8:])
}

var (
	nodeByID = strata.Index[*Node, uint64]{
		Name:       "id",
		FromObject: func(n *Node) index.KeySet { return index.KeySetOf(index.Uint64(n.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	nodeByZone = strata.Index[*Node, string]{
		Name:       "zone",
		FromObject: func(n *Node) index.KeySet { return index.NewKeySet(index.String(n.Zone)) },
		FromKey:    index.String,
	}
	routeByPrefix = strata.Index[*Route, netip.Prefix]{
		Name:       "prefix",
		FromObject: func(r *Route) index.KeySet { return index.NewKeySet(index.NetIPPrefix(r.Prefix)) },
		FromKey:    index.NetIPPrefix,
		Unique:     true,
	}
	nodeCodec  = persist.JSON[*Node]()
	routeCodec = persist.Binary[Route]()
)

func main() {
	root := &cobra.Command{Use: "embed", Short: "An application with the strata command tree inside", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(seedCommand(), stratacli.NewCommand(
		stratacli.WithName("debug"),
		stratacli.WithTable("nodes", nodeCodec, nodeByID, nodeByZone),
		stratacli.WithTable("routes", routeCodec, routeByPrefix),
	))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := stratacli.Run(ctx, root, os.Args[1:])
	stop()
	os.Exit(code)
}

// seedCommand writes n nodes and a route per node into the store --dir:
// the application's own work, here to make a store to look at.
func seedCommand() *cobra.Command {
	var dir string
	var n int
	cmd := &cobra.Command{
		Use:   "seed",
		Short: "Write nodes and routes into a store",
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := persist.Open(dir, persist.Options{})
			if err != nil {
				return err
			}
			defer store.Close()
			db := strata.New()
			nodes := strata.MustNewTable(db, "nodes", nodeByID, nodeByZone)
			routes := strata.MustNewTable(db, "routes", routeByPrefix)
			if err := store.Register(persist.Table(nodes, nodeCodec), persist.Table(routes, routeCodec)); err != nil {
				return err
			}
			txn := db.WriteTxn(nodes, routes)
			zones := []string{"eu", "us", "ap"}
			for i := range n {
				id := uint64(i + 1)
				if _, _, err := nodes.Insert(txn, &Node{ID: id, Name: fmt.Sprintf("node-%d", id), Zone: zones[i%len(zones)], Tags: []string{"seed"}}); err != nil {
					return err
				}
				if _, _, err := routes.Insert(txn, &Route{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24), NodeID: id}); err != nil {
					return err
				}
			}
			_, err = txn.Commit()
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the store `directory`")
	cmd.Flags().IntVarP(&n, "nodes", "n", 9, "how many nodes")
	return cmd
}
