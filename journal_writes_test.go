package strata

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/strata-db/strata/part"
)

var replaySeedFlag = flag.Uint64("strata.replay.seed", 0, "seed of TestApplyWriteReplica (0: random)")

// recJournal is a Journal whose tables are attached with a recTable: each
// committed record's writes are kept, in order, per table.
type recJournal struct{ committed [][]recWrite }

type recBatch struct {
	j      *recJournal
	writes []recWrite
}

// recWrite is one write a recTable received; rev is set on the
// SetRevision that ends a table's writes (kind 0).
type recWrite struct {
	table string
	w     JournalWrite[*testObject]
}

func (j *recJournal) Begin() JournalBatch { return &recBatch{j: j} }
func (b *recBatch) Commit() error {
	b.j.committed = append(b.j.committed, b.writes)
	return nil
}
func (b *recBatch) Discard() {}

// recTable is a TableWriteJournal that records into a recBatch.
type recTable struct {
	TableJournal[*testObject] // not called: Write replaces it
	name                      string
}

func (r recTable) Write(b JournalBatch, w JournalWrite[*testObject]) error {
	w.PrimaryKey = bytes.Clone(w.PrimaryKey)
	rb := b.(*recBatch)
	rb.writes = append(rb.writes, recWrite{r.name, w})
	return nil
}

func (r recTable) SetRevision(b JournalBatch, rev Revision) error {
	rb := b.(*recBatch)
	rb.writes = append(rb.writes, recWrite{r.name, JournalWrite[*testObject]{Revision: rev}})
	return nil
}

// replicaPair is a leader database whose tables record every write and a
// replica that applies them, with a change feed on each table of both.
type replicaPair struct {
	t                  *testing.T
	leader, replica    *DB
	lt, rt             []RWTable[*testObject]
	lfeeds, rfeeds     []ChangeIterator[*testObject]
	journal            *recJournal
	lchanges, rchanges [][]string
}

func newReplicaPair(t *testing.T) *replicaPair {
	p := &replicaPair{t: t, leader: New(), replica: New(), journal: &recJournal{}}
	for i, name := range []string{"a", "b"} {
		secondary := []Indexer[*testObject]{tagsIndex, valueIndex}
		if i == 1 {
			secondary = append(secondary, RevisionIndex[*testObject]())
		}
		p.lt = append(p.lt, newTestTable(t, p.leader, name, secondary...))
		p.rt = append(p.rt, newTestTable(t, p.replica, name, secondary...))
	}
	txn := p.leader.WriteTxn(p.lt[0], p.lt[1])
	for i, tbl := range p.lt {
		must(t, SetJournal(txn, tbl, p.journal, TableJournal[*testObject](recTable{name: string(tbl.Name())})))
		it, err := tbl.Changes(txn, WithCreated())
		must(t, err)
		p.lfeeds = append(p.lfeeds, it)
		_ = i
	}
	mustCommit(t, txn)
	rtxn := p.replica.WriteTxn(p.rt[0], p.rt[1])
	for _, tbl := range p.rt {
		it, err := tbl.Changes(rtxn, WithCreated())
		must(t, err)
		p.rfeeds = append(p.rfeeds, it)
	}
	mustCommit(t, rtxn)
	p.lchanges, p.rchanges = make([][]string, 2), make([][]string, 2)
	return p
}

func (p *replicaPair) close() {
	for _, it := range slices.Concat(p.lfeeds, p.rfeeds) {
		it.Close()
	}
}

// replay applies the leader's last committed record to the replica in
// one transaction, and checks each table's revision after it.
func (p *replicaPair) replay() {
	t := p.t
	rec := p.journal.committed[len(p.journal.committed)-1]
	txn := p.replica.WriteTxn(p.rt[0], p.rt[1])
	for _, w := range rec {
		tbl := p.rt[0]
		if w.table == "b" {
			tbl = p.rt[1]
		}
		if w.w.Kind == 0 { // SetRevision: the table's revision after the writes
			if got := tbl.Revision(txn); got != w.w.Revision {
				t.Fatalf("table %s: replica at revision %d after the writes, leader at %d", w.table, got, w.w.Revision)
			}
			continue
		}
		if err := ApplyWrite(txn, tbl, w.w); err != nil {
			t.Fatalf("ApplyWrite %+v: %v", w.w, err)
		}
	}
	mustCommit(t, txn)
}

// dump is a table's objects with their revisions, its revision and, for
// a table with the revision index, the objects in revision order.
func dump(tbl Table[*testObject], txn ReadTxn) string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "revision %d:", tbl.Revision(txn))
	for o, rev := range tbl.All(txn) {
		fmt.Fprintf(&b, " %d=%s/%d/%v@%d", o.ID, o.Name, o.Value, slices.Collect(o.Tags.All()), rev)
	}
	if tbl.Name() == "b" {
		b.WriteString(" by revision:")
		for o, rev := range tbl.LowerBound(txn, ByRevision[*testObject](0)) {
			fmt.Fprintf(&b, " %d@%d", o.ID, rev)
		}
	}
	return b.String()
}

// check compares the two databases and what their feeds deliver.
func (p *replicaPair) check(step int) {
	t := p.t
	l, r := p.leader.ReadTxn(), p.replica.ReadTxn()
	for i := range p.lt {
		if dl, dr := dump(p.lt[i], l), dump(p.rt[i], r); dl != dr {
			t.Fatalf("step %d: table %s differs:\nleader  %s\nreplica %s", step, p.lt[i].Name(), dl, dr)
		}
		p.lchanges[i] = feedTo(p.lchanges[i], p.lfeeds[i], l)
		p.rchanges[i] = feedTo(p.rchanges[i], p.rfeeds[i], r)
		if !slices.Equal(p.lchanges[i], p.rchanges[i]) {
			t.Fatalf("step %d: table %s: the feeds differ:\nleader  %v\nreplica %v", step, p.lt[i].Name(), p.lchanges[i], p.rchanges[i])
		}
	}
}

func feedTo(dst []string, it ChangeIterator[*testObject], txn ReadTxn) []string {
	seq, _ := it.Next(txn)
	for c := range seq {
		dst = append(dst, fmt.Sprintf("%d=%d@%d del=%v created=%v", c.Object.ID, c.Object.Value, c.Revision, c.Deleted, c.Created))
	}
	return dst
}

// TestApplyWriteReplica: a replica that applies, with ApplyWrite, every
// write its leader's TableWriteJournal received, commit by commit, holds
// after each commit the same objects at the same revisions, the same table
// revisions and the same revision index, and its change feeds deliver the
// same changes at the same revisions. The leader's transactions mix every
// kind of write on two tables: inserts, Modify, CompareAndSwap, deletes,
// DeleteAll, DeletePrefix and DeleteMatches, objects written several
// times and objects inserted and deleted in one transaction; some abort.
func TestApplyWriteReplica(t *testing.T) {
	seed := *replaySeedFlag
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (-strata.replay.seed=%d replays it)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 3))
	p := newReplicaPair(t)
	defer p.close()
	steps := 600
	if testing.Short() {
		steps = 150
	}
	if *mdlLongFlag {
		steps *= 10 // make models-long
	}
	kinds := map[string]int{}
	for step := range steps {
		txn := p.leader.WriteTxn(p.lt[0], p.lt[1])
		for range 1 + r.IntN(6) {
			tbl := p.lt[r.IntN(2)]
			id := uint64(1 + r.IntN(20))
			obj := &testObject{ID: id, Name: fmt.Sprint("n", id), Value: r.IntN(5), Tags: part.NewSet(fmt.Sprint("t", r.IntN(3)))}
			var err error
			k := r.IntN(20)
			// At least one DeleteAll a run: a short run of some seeds
			// drew none, and the coverage check below failed in CI.
			forceAll := step == steps/2 && kinds["delete all"] == 0
			if forceAll {
				k = 18
			}
			switch {
			case k < 8:
				kinds["insert"]++
				_, _, err = tbl.Insert(txn, obj)
			case k < 10:
				kinds["modify"]++
				_, _, err = tbl.Modify(txn, obj, func(old, new *testObject) *testObject {
					return &testObject{ID: new.ID, Name: old.Name, Value: old.Value + new.Value, Tags: new.Tags}
				})
			case k < 11:
				kinds["cas"]++
				if old, rev, found := tbl.Get(txn, idIndex.Query(id)); found {
					_, _, err = tbl.CompareAndSwap(txn, rev, &testObject{ID: id, Name: old.Name, Value: old.Value + 1})
				}
			case k < 15:
				kinds["delete"]++
				_, _, err = tbl.Delete(txn, obj)
			case k < 16:
				kinds["insert and delete"]++
				fresh := &testObject{ID: 100 + id, Value: 9}
				if _, _, err = tbl.Insert(txn, fresh); err == nil {
					_, _, err = tbl.Delete(txn, fresh)
				}
			case k < 17:
				kinds["delete matches"]++
				_, err = tbl.DeleteMatches(txn, tagsIndex.Query(fmt.Sprint("t", r.IntN(3))))
			case k < 18:
				kinds["delete prefix"]++
				_, err = tbl.DeletePrefix(txn, idIndex.Query(id))
			case k < 19 && (r.IntN(4) == 0 || forceAll):
				kinds["delete all"]++
				err = tbl.DeleteAll(txn)
			default:
				kinds["insert"]++
				_, _, err = tbl.Insert(txn, obj)
			}
			must(t, err)
		}
		if r.IntN(8) == 0 {
			kinds["abort"]++
			before := len(p.journal.committed)
			txn.Abort()
			if len(p.journal.committed) != before {
				t.Fatal("an aborted transaction reached the journal")
			}
		} else {
			before := len(p.journal.committed)
			mustCommit(t, txn)
			if len(p.journal.committed) == before+1 {
				p.replay()
			}
		}
		p.check(step)
	}
	t.Logf("%d steps, %d records: %v", steps, len(p.journal.committed), kinds)
	for _, k := range []string{"insert", "modify", "cas", "delete", "insert and delete", "delete matches", "delete prefix", "delete all", "abort"} {
		if kinds[k] == 0 {
			t.Errorf("no %s in %d steps", k, steps)
		}
	}
}

// TestApplyWriteRefuses: a write that cannot follow the table's state is
// refused with ErrWriteOrder, and changes nothing.
func TestApplyWriteRefuses(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "t", tagsIndex)
	txn := db.WriteTxn(tbl)
	must(t, ApplyWrite(txn, tbl, JournalWrite[*testObject]{Kind: WriteUpsert, Object: &testObject{ID: 1}, Revision: 5}))
	before := dump(tbl, txn)
	for name, w := range map[string]JournalWrite[*testObject]{
		"same revision":     {Kind: WriteUpsert, Object: &testObject{ID: 2}, Revision: 5},
		"lower revision":    {Kind: WriteUpsert, Object: &testObject{ID: 2}, Revision: 3},
		"delete of nothing": {Kind: WriteDelete, Object: &testObject{ID: 2}, Revision: 6},
		"unknown kind":      {Kind: 9, Object: &testObject{ID: 2}, Revision: 6},
		"delete all, lower": {Kind: WriteDeleteAll, Revision: 4},
	} {
		if err := ApplyWrite(txn, tbl, w); !errors.Is(err, ErrWriteOrder) {
			t.Errorf("%s: %v, want ErrWriteOrder", name, err)
		}
		if got := dump(tbl, txn); got != before {
			t.Errorf("%s changed the table: %s, was %s", name, got, before)
		}
	}
	// The revision left free before is used by the next write that fits.
	must(t, ApplyWrite(txn, tbl, JournalWrite[*testObject]{Kind: WriteDelete, Object: &testObject{ID: 1}, Revision: 6}))
	if err := ApplyWrite(txn, tbl, JournalWrite[*testObject]{Kind: WriteDeleteAll, Revision: 7}); !errors.Is(err, ErrWriteOrder) {
		t.Errorf("DeleteAll of an empty table: %v, want ErrWriteOrder", err)
	}
	rtxn := mustCommit(t, txn)
	if got := tbl.Revision(rtxn); got != 6 {
		t.Errorf("table revision %d after writes at 5 and 6", got)
	}
}
