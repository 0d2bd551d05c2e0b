package persist_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// Lease is the object of the expiry test: it expires at Expires, or never
// if that is the zero time.
type Lease struct {
	ID      uint64
	Expires time.Time
}

var (
	leaseByID = strata.Index[*Lease, uint64]{
		Name:       "id",
		FromObject: func(l *Lease) index.KeySet { return index.KeySetOf(index.Uint64(l.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	leaseByExpiry = strata.ExpiryIndex[*Lease]{
		Name:       "expires",
		FromObject: func(l *Lease) time.Time { return l.Expires },
	}
)

// openLeases opens the store in dir and a database with its leases table
// registered with it, loaded.
func openLeases(t *testing.T, dir string) (*persist.Store, *strata.DB, strata.RWTable[*Lease]) {
	t.Helper()
	store, err := persist.Open(dir, persist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db := strata.New()
	leases := strata.MustNewTable(db, "leases", leaseByID, leaseByExpiry)
	if err := store.Register(persist.Table(leases, persist.JSON[*Lease]())); err != nil {
		t.Fatal(err)
	}
	return store, db, leases
}

func leaseIDs(txn strata.ReadTxn, leases strata.Table[*Lease]) []uint64 {
	var ids []uint64
	for l := range leases.All(txn) {
		ids = append(ids, l.ID)
	}
	return ids
}

// TestExpiryAfterRestart: a durable table whose objects expired while the
// program was down loads them all (a load checks no expiry), and an
// Expirer deletes them once it runs: the deletes reach a change feed and
// the store, so that the next start finds them gone. Pebble runs in the
// synctest bubble, on the disk (as TestGroupInterleavings runs it on a
// MemFS), so that the two hours the program is down pass at once.
func TestExpiryAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		start := time.Now()
		store, db, leases := openLeases(t, dir)
		txn := db.WriteTxn(leases)
		for i := range uint64(6) {
			l := &Lease{ID: i, Expires: start.Add(time.Duration(i) * time.Hour)}
			if i == 0 {
				l.Expires = time.Time{} // never expires
			}
			if _, _, err := leases.Insert(txn, l); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := txn.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}

		// Down for two and a half hours: leases 1 and 2 expired meanwhile.
		time.Sleep(150 * time.Minute)
		store, db, leases = openLeases(t, dir)
		if ids := leaseIDs(db.ReadTxn(), leases); !slices.Equal(ids, []uint64{0, 1, 2, 3, 4, 5}) {
			t.Fatalf("loaded %v, want every lease", ids)
		}
		wtxn := db.WriteTxn(leases)
		feed, err := leases.Changes(wtxn)
		if err != nil {
			t.Fatal(err)
		}
		defer feed.Close()
		if _, err := wtxn.Commit(); err != nil {
			t.Fatal(err)
		}
		changes, _ := feed.Next(db.ReadTxn())
		held := map[uint64]bool{}
		for c := range changes {
			held[c.Object.ID] = true
		}

		e, err := strata.NewExpirer(db, strata.ExpirerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- e.Run(ctx) }()
		synctest.Wait()
		if ids := leaseIDs(db.ReadTxn(), leases); !slices.Equal(ids, []uint64{0, 3, 4, 5}) {
			t.Fatalf("after the expirer's first pass: %v", ids)
		}
		// Lease 3 expires half an hour later, while the program runs.
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) || e.Err() != nil || e.Expired() != 3 {
			t.Fatalf("Run: %v, Err %v, %d expired", err, e.Err(), e.Expired())
		}
		changes, _ = feed.Next(db.ReadTxn())
		for c := range changes {
			if !c.Deleted || !held[c.Object.ID] {
				t.Fatalf("feed: %+v, want the delete of a lease it holds", c)
			}
			delete(held, c.Object.ID)
		}
		if ids := slices.Sorted(maps.Keys(held)); !slices.Equal(ids, []uint64{0, 4, 5}) {
			t.Fatalf("the feed holds %v", ids)
		}
		if err := store.Close(); err != nil {
			t.Fatal(err)
		}

		store, db, leases = openLeases(t, dir)
		defer func() {
			if err := store.Close(); err != nil {
				t.Error(err)
			}
		}()
		if ids := leaseIDs(db.ReadTxn(), leases); !slices.Equal(ids, []uint64{0, 4, 5}) {
			t.Fatalf("after a restart: %v, want the leases not expired", ids)
		}
	})
}
