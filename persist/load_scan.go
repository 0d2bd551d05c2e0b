package persist

// The scan of a table's stored records while Register restores them: a
// goroutine of its own reads and decodes batches of records from Pebble
// and hands them to the restoring transaction, so that decoding overlaps
// the tree's inserts (persist/README.md, recovery).

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
	"github.com/strata-db/strata"
)

// loadBatch is a run of objects the scan decoded, in key order, with
// their revisions; the last batch of a scan may carry what ended it.
type loadBatch[Obj any] struct {
	objs []strata.StoredObject[Obj]
	revs []strata.Revision
	// values are the stored values, kept only with Rekey (keyChanged
	// records them in a move).
	values [][]byte
	// keys holds the bytes of the objects' stored keys (objs[i].Key);
	// ends[i] is where the key of objs[i] ends in it.
	keys []byte
	ends []int
	// err is the error that ended the scan, after objs.
	err error
	// panicked is a panic that ended the scan, raised again by the
	// restoring goroutine after objs.
	panicked *scanPanic
}

// scanPanic carries a panic's value from the scan to the goroutine that
// restores (a nil panic value is a *runtime.PanicNilError since Go 1.21,
// so the value is never nil).
type scanPanic struct{ value any }

// scanner is the scanning side of a load (load says how the two meet).
type scanner[Obj any] struct {
	b         *binding[Obj]
	it        *pebble.Iterator
	prefixLen int
	// out carries the batches to the restore, and is closed when the scan
	// has ended and closed the iterator; free brings batches back to be
	// filled again; stop is closed when the restore takes no more.
	out, free chan *loadBatch[Obj]
	stop      chan struct{}
}

// run scans the table's keys into batches; it closes the iterator, then
// out.
func (sc *scanner[Obj]) run() {
	defer close(sc.out)
	// batch is the batch being filled, nil once it is sent.
	var batch *loadBatch[Obj]
	// Deferred before the iterator's Close, so that a panic of Close (a
	// fatal error of Pebble) reaches the restore too.
	defer func() {
		if r := recover(); r != nil {
			if batch == nil {
				batch = sc.batch()
			}
			batch.panicked = &scanPanic{value: r}
			sc.send(batch)
		}
	}()
	defer sc.it.Close()
	batch = sc.batch()
	it := sc.it
	for it.First(); it.Valid(); it.Next() {
		obj, rev, err := sc.b.decode(it, sc.prefixLen)
		if err != nil {
			batch.err = err
			sc.send(batch)
			batch = nil
			return
		}
		batch.objs = append(batch.objs, strata.StoredObject[Obj]{Obj: obj})
		batch.revs = append(batch.revs, rev)
		batch.keys = append(batch.keys, it.Key()[sc.prefixLen:]...)
		batch.ends = append(batch.ends, len(batch.keys))
		if sc.b.opts.rekey {
			batch.values = append(batch.values, bytes.Clone(it.Value()))
		}
		if len(batch.objs) == loadBatchSize {
			sent := sc.send(batch)
			batch = nil
			if !sent {
				return
			}
			batch = sc.batch()
		}
	}
	batch.err = fromPebble(it.Error())
	sc.send(batch)
	batch = nil
}

// batch returns an empty batch, one the restore is done with if there is.
func (sc *scanner[Obj]) batch() *loadBatch[Obj] {
	select {
	case batch := <-sc.free:
		return batch
	default:
		return &loadBatch[Obj]{
			objs: make([]strata.StoredObject[Obj], 0, loadBatchSize),
			revs: make([]strata.Revision, 0, loadBatchSize),
			ends: make([]int, 0, loadBatchSize),
		}
	}
}

// send hands batch to the restore, its keys set; it reports false if the
// restore takes no more.
func (sc *scanner[Obj]) send(batch *loadBatch[Obj]) bool {
	start := 0
	for i, end := range batch.ends {
		batch.objs[i].Key = batch.keys[start:end:end]
		start = end
	}
	// Checked first: once the restore has stopped, end drains out, and a
	// send would not block to see it.
	select {
	case <-sc.stop:
		return false
	default:
	}
	select {
	case sc.out <- batch:
		return true
	case <-sc.stop:
		return false
	}
}

// recycle gives a batch the restore is done with back to the scan. Its
// objects are in the table's trees, not in the batch, once cleared.
func (sc *scanner[Obj]) recycle(batch *loadBatch[Obj]) {
	clear(batch.objs)
	batch.objs, batch.revs, batch.keys, batch.ends = batch.objs[:0], batch.revs[:0], batch.keys[:0], batch.ends[:0]
	batch.values = nil
	select {
	case sc.free <- batch:
	default:
	}
}

// end stops the scan and waits until it has ended (and closed its
// iterator).
func (sc *scanner[Obj]) end() {
	close(sc.stop)
	for range sc.out {
	}
}

// loadBatchSize is how many objects the scan decodes into a batch, and
// loadBatches how many batches it may be ahead of the restore.
const (
	loadBatchSize = 256
	loadBatches   = 4
)
