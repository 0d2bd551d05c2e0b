package replicated_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/cilium/hive/cell"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"github.com/strata-db/strata/reconciler"
	"github.com/strata-db/strata/reconciler/reconcilertest"
	"github.com/strata-db/strata/stratahive/replicated"
)

// Task is the reconciled replicated table of TestLeaderReconciler.
type Task struct {
	ID     string            `json:"id"`
	Status reconciler.Status `json:"status"`
}

var taskByID = strata.Index[*Task, string]{
	Name:       "id",
	FromObject: func(t *Task) index.KeySet { return index.NewKeySet(index.String(t.ID)) },
	FromKey:    index.String,
	Unique:     true,
}

// TestLeaderReconciler: a replicated.Reconciler runs on the leader only:
// a task inserted reaches the leader's world alone, and its Done status
// every node; after a leadership transfer, the next task reaches the new
// leader's world alone, and the first is not done again.
func TestLeaderReconciler(t *testing.T) {
	worlds := map[string]*reconcilertest.World[*Task]{}
	tasks := map[string]strata.RWTable[*Task]{}
	c := newClusterWith(t, 3, func(m *member) []cell.Cell {
		w := reconcilertest.NewWorld(func(t *Task) string { return t.ID })
		worlds[m.id] = w
		return []cell.Cell{
			replicated.Table("tasks", persist.JSON[*Task](), taskByID),
			cell.Provide(func() reconciler.Operations[*Task] { return w }),
			replicated.Reconciler(
				func(t *Task) *Task { c := *t; return &c },
				func(t *Task, s reconciler.Status) *Task { t.Status = s; return t },
				func(t *Task) reconciler.Status { return t.Status },
				reconciler.WithoutPruning(), reconciler.WithoutRefresh(),
			),
			cell.Invoke(func(tt strata.RWTable[*Task]) { tasks[m.id] = tt }),
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// insert adds a pending task on the leader, and waits until every
	// member holds it Done and the leader's world holds exactly want.
	insert := func(ld *member, id string, want ...string) {
		t.Helper()
		tbl := tasks[ld.id]
		_, err := ld.node().Write(ctx, []strata.TableMeta{tbl}, func(txn strata.WriteTxn) error {
			_, _, err := tbl.Insert(txn, &Task{ID: id, Status: reconciler.StatusPending()})
			return err
		})
		must(t, err)
		for _, m := range c.members {
			waitFor(t, m.id+" holding task "+id+" done", func() bool {
				task, _, found := tasks[m.id].Get(m.db.ReadTxn(), taskByID.Query(id))
				return found && task.Status.Kind == reconciler.StatusKindDone
			})
		}
		if got := worlds[ld.id].Keys(); !slices.Equal(got, want) {
			t.Fatalf("leader %s's world: %v, want %v", ld.id, got, want)
		}
	}

	first := c.leader()
	insert(first, "t1", "t1")
	must(t, first.node().TransferLeadership(ctx, ""))
	var second *member
	waitFor(t, "another leader", func() bool {
		for _, m := range c.members {
			if leading, _ := m.node().Leading(); leading && m != first {
				second = m
				return true
			}
		}
		return false
	})
	insert(second, "t2", "t2")
	for _, m := range c.members {
		var want []string
		switch m {
		case first:
			want = []string{"t1"}
		case second:
			want = []string{"t2"}
		}
		if got := worlds[m.id].Keys(); !slices.Equal(got, want) {
			t.Errorf("%s's world: %v, want %v", m.id, got, want)
		}
	}
}
