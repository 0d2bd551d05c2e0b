package stratahive_test

import (
	"errors"
	"testing"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/hive/job"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/stratahive"
)

// TestDeriveRegistrationFails: the commit that registers Derive's
// initializer on the output table fails (in the table's journal, a store
// that cannot write), and the hive's construction fails with its error;
// the output table is left as it was, with no initializer pending.
func TestDeriveRegistrationFails(t *testing.T) {
	errDisk := errors.New("disk full")
	var (
		db      *strata.DB
		records strata.RWTable[*Record]
	)
	h := hive.New(
		stratahive.Cell,
		job.Cell,
		cell.Provide(func() cell.Health { h, _ := cell.NewSimpleHealth(); return h }),
		cell.Module("app", "The test application",
			stratahive.Table("hosts", hostByName),
			stratahive.Table("records", recordByFQDN),
			cell.Provide(job.Registry.NewGroup),
			cell.Invoke(func(d *strata.DB, r strata.RWTable[*Record]) error {
				db, records = d, r
				wtxn := d.WriteTxn(r)
				if err := strata.SetJournal(wtxn, r, failingJournal{errDisk}, nopJournal{}); err != nil {
					wtxn.Abort()
					return err
				}
				_, err := wtxn.Commit()
				return err
			}),
			cell.Decorate(
				func(r strata.RWTable[*Record]) strata.RWTable[*Record] { return registeringWrites{r} },
				cell.Invoke(stratahive.Derive("derive-records", hostRecord)),
			),
		),
	)
	err := h.Populate(hivetest.Logger(t))
	if !errors.Is(err, errDisk) {
		t.Fatalf("Populate: %v; want the journal's error", err)
	}
	rtxn := db.ReadTxn()
	if ok, _ := records.Initialized(rtxn); !ok || len(records.PendingInitializers(rtxn)) != 0 || records.NumObjects(rtxn) != 0 {
		t.Fatalf("after the failed commit: initialized %v, pending %v, %d objects; want the table as it was",
			ok, records.PendingInitializers(rtxn), records.NumObjects(rtxn))
	}
}

// registeringWrites is a table that writes an object, named after the
// initializer, into the transaction that registers one: so that the
// registering commit meets the table's journal.
type registeringWrites struct{ strata.RWTable[*Record] }

func (r registeringWrites) RegisterInitializer(txn strata.WriteTxn, name string) func(strata.WriteTxn) {
	done := r.RWTable.RegisterInitializer(txn, name)
	if _, _, err := r.Insert(txn, &Record{FQDN: name}); err != nil {
		panic(err)
	}
	return done
}

// failingJournal is a journal whose records fail to commit with err.
type failingJournal struct{ err error }

func (j failingJournal) Begin() strata.JournalBatch { return failingBatch(j) }

type failingBatch struct{ err error }

func (b failingBatch) Commit() error { return b.err }
func (failingBatch) Discard()        {}

// nopJournal records nothing: the batch's Commit fails first.
type nopJournal struct{}

func (nopJournal) Upsert(strata.JournalBatch, []byte, *Record, strata.Revision) error { return nil }
func (nopJournal) Delete(strata.JournalBatch, []byte) error                           { return nil }
func (nopJournal) DeleteAll(strata.JournalBatch) error                                { return nil }
func (nopJournal) SetRevision(strata.JournalBatch, strata.Revision) error             { return nil }
