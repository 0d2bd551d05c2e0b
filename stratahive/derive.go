package stratahive

import (
	"context"
	"fmt"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"

	"github.com/strata-db/strata"
)

// DeriveResult says what Derive does with the object a transform returns.
type DeriveResult int

// The results of a Derive transform, statedb's.
const (
	// DeriveInsert inserts the object, replacing the one of its primary
	// key.
	DeriveInsert DeriveResult = 0
	// DeriveUpdate replaces the object of its primary key, if there is
	// one; otherwise it does nothing.
	DeriveUpdate DeriveResult = 1
	// DeriveDelete deletes the object of its primary key.
	DeriveDelete DeriveResult = 2
	// DeriveSkip does nothing.
	DeriveSkip DeriveResult = 3
)

// DeriveParams are what Derive's function takes from the hive.
type DeriveParams[In, Out any] struct {
	cell.In

	Lifecycle cell.Lifecycle
	JobGroup  job.Group
	DB        *strata.DB
	InTable   strata.Table[In]
	OutTable  strata.RWTable[Out]
}

// Derive returns an invoke function that keeps the output table derived
// from the input table: a one-shot job, named jobName, in the module's
// job group, that reads the input table's change feed and, for each
// object inserted, replaced or deleted there (deleted = true), calls
// transform and inserts, updates, deletes or skips the object it returns.
// Each batch of changes is applied in one write transaction of the output
// table. Deletes propagate: a delete in the input table is a call with
// deleted set, whose DeriveDelete removes the output object.
//
// The output table gets an initializer named jobName when the hive is
// built, done in the transaction that has applied every change up to the
// input table's initialization: readers that wait for the output table
// to be initialized see everything the initialized input implies. If the
// transaction that registers it fails to commit, the invoke function
// returns the error (wrapped, for errors.Is), which fails the hive's
// construction, and adds no job.
//
//	cell.Invoke(stratahive.Derive("derive-routes",
//		func(h *Host, deleted bool) (*Route, stratahive.DeriveResult) { ... }))
//
// A write the output table refuses (a unique index, a durable table whose
// store fails) stops the job with that error, which its health reports.
func Derive[In, Out any](jobName string, transform func(obj In, deleted bool) (Out, DeriveResult)) func(DeriveParams[In, Out]) error {
	return func(p DeriveParams[In, Out]) error {
		wtxn := p.DB.WriteTxn(p.OutTable)
		markInit := p.OutTable.RegisterInitializer(wtxn, jobName)
		if _, err := wtxn.Commit(); err != nil {
			return fmt.Errorf("derive %s: registering the initializer of table %q: %w", jobName, p.OutTable.Name(), err)
		}
		d := &derivation[In, Out]{p: p, name: jobName, transform: transform, markInit: markInit}
		p.JobGroup.Add(job.OneShot(jobName, d.run))
		return nil
	}
}

type derivation[In, Out any] struct {
	p         DeriveParams[In, Out]
	name      string
	transform func(In, bool) (Out, DeriveResult)
	// markInit is the output's initializer, nil once done.
	markInit func(strata.WriteTxn)
}

func (d *derivation[In, Out]) run(ctx context.Context, _ cell.Health) error {
	db, in, out := d.p.DB, d.p.InTable, d.p.OutTable
	wtxn := db.WriteTxn(in)
	feed, err := in.Changes(wtxn)
	if err != nil {
		wtxn.Abort()
		return fmt.Errorf("derive %s: %w", d.name, err)
	}
	defer feed.Close()
	if _, err := wtxn.Commit(); err != nil {
		return fmt.Errorf("derive %s: %w", d.name, err)
	}
	for {
		wtxn := db.WriteTxn(out)
		changes, watch := feed.Next(wtxn)
		for c := range changes {
			if err := d.apply(wtxn, c.Object, c.Deleted); err != nil {
				wtxn.Abort()
				return fmt.Errorf("derive %s: %w", d.name, err)
			}
		}
		var initWatch <-chan struct{}
		if d.markInit != nil {
			// The feed read up to the snapshot wtxn holds of the input
			// table: the one this asks.
			if ok, ch := in.Initialized(wtxn); ok {
				d.markInit(wtxn)
			} else {
				initWatch = ch
			}
		}
		if _, err := wtxn.Commit(); err != nil {
			return fmt.Errorf("derive %s: %w", d.name, err)
		}
		if initWatch == nil {
			d.markInit = nil
		}
		select {
		case <-watch:
		case <-initWatch:
		case <-ctx.Done():
			return nil
		}
	}
}

// apply writes the transform's result for one change.
func (d *derivation[In, Out]) apply(wtxn strata.WriteTxn, obj In, deleted bool) error {
	out := d.p.OutTable
	o, result := d.transform(obj, deleted)
	var err error
	switch result {
	case DeriveInsert:
		_, _, err = out.Insert(wtxn, o)
	case DeriveUpdate:
		if q, ok := primaryQuery(out, o); ok {
			if _, _, found := out.Get(wtxn, q); found {
				_, _, err = out.Insert(wtxn, o)
			}
		}
	case DeriveDelete:
		_, _, err = out.Delete(wtxn, o)
	case DeriveSkip:
	default:
		err = fmt.Errorf("transform returned unknown DeriveResult %d", result)
	}
	return err
}

// primaryQuery returns the query of obj's primary key. Every primary
// index is a strata.Index, which has QueryFromObject.
func primaryQuery[Obj any](t strata.Table[Obj], obj Obj) (strata.Query[Obj], bool) {
	ix, ok := t.PrimaryIndexer().(interface {
		QueryFromObject(Obj) (strata.Query[Obj], bool)
	})
	if !ok {
		return strata.Query[Obj]{}, false
	}
	return ix.QueryFromObject(obj)
}
