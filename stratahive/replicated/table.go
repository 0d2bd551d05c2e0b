package replicated

import (
	"github.com/cilium/hive/cell"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/replicate"
	"github.com/strata-db/strata/stratahive"
)

// TableParams are what a replicated table's cell takes from the hive.
type TableParams struct {
	cell.In
	stratahive.TableParams

	Replica *Replica
}

// Table declares a replicated table of Obj, named name, whose objects the
// codec encodes on the raft log, as a cell: like stratahive.Table, it
// provides the table as strata.RWTable[Obj] and strata.Table[Obj], and
// it binds the table to the hive's node (replicate.Bind), which
// replicates it from the hive's start.
//
// Every node of the cluster declares the same replicated tables, with
// codecs that read each other's values. The table's primary index must be
// a strata.Index (deletions travel by primary key). From the start, a
// commit of the table on the leader goes through raft, and on a follower
// fails with a *replicate.NotLeaderError: write through
// Replica.Node().Write, which forwards a follower's writes to the leader.
// Do not write to it before the hive starts: such writes are this node's
// alone.
func Table[Obj any](name strata.TableName, codec persist.Codec[Obj], primary strata.Indexer[Obj], secondary ...strata.Indexer[Obj]) cell.Cell {
	return cell.Group(
		cell.Provide(func(p TableParams) (strata.RWTable[Obj], strata.Table[Obj], error) {
			t, err := stratahive.NewTable(p.TableParams, name, primary, secondary...)
			if err != nil {
				return nil, nil, err
			}
			if err := p.Replica.add(replicate.Bind(t, codec)); err != nil {
				return nil, nil, err
			}
			return t, t, nil
		}),
		cell.Invoke(func(strata.RWTable[Obj]) {}),
	)
}
