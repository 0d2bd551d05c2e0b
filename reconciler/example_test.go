package reconciler_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sync"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
)

// Route is a desired route; its Status says whether the outside world
// has it.
type Route struct {
	Prefix  string
	NextHop string
	Status  reconciler.Status
}

func (r *Route) Clone() *Route                        { c := *r; return &c }
func (r *Route) GetStatus() reconciler.Status         { return r.Status }
func (r *Route) SetStatus(s reconciler.Status) *Route { r.Status = s; return r }

var routeByPrefix = strata.Index[*Route, string]{
	Name:       "prefix",
	FromObject: func(r *Route) index.KeySet { return index.NewKeySet(index.String(r.Prefix)) },
	FromKey:    index.String,
	Unique:     true,
}

// kernel is the outside world: a routing table.
type kernel struct {
	mu     sync.Mutex
	routes map[string]string
}

func (k *kernel) Update(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, r *Route) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.routes[r.Prefix] = r.NextHop
	return nil
}

func (k *kernel) Delete(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, r *Route) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.routes, r.Prefix)
	return nil
}

// Prune deletes the routes the table does not hold, within the prune
// budget if the reconciler has one (WithPruneBudget).
func (k *kernel) Prune(ctx context.Context, txn strata.ReadTxn, desired iter.Seq2[*Route, strata.Revision]) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	prefix := func(r *Route) string { return r.Prefix }
	_, err := reconciler.PruneStrangers(ctx, desired, prefix, maps.Keys(k.routes), func(p string) error {
		delete(k.routes, p)
		return nil
	})
	return err
}

// ExamplePruneStrangers prunes a routing table: the routes that the
// desired set does not hold go.
func ExamplePruneStrangers() {
	db := strata.New()
	routes := strata.MustNewTable(db, "routes", routeByPrefix)
	wtxn := db.WriteTxn(routes)
	if _, _, err := routes.Insert(wtxn, &Route{Prefix: "10.0.0.0/8", NextHop: "eth0"}); err != nil {
		panic(err)
	}
	txn, err := wtxn.Commit()
	if err != nil {
		panic(err)
	}
	held := map[string]string{"10.0.0.0/8": "eth0", "192.168.0.0/16": "eth9", "172.16.0.0/12": "eth8"}

	// The context of a prune carries the reconciler's budget; outside
	// a prune there is none.
	deleted, err := reconciler.PruneStrangers(context.Background(), routes.All(txn),
		func(r *Route) string { return r.Prefix },
		slices.Values(slices.Sorted(maps.Keys(held))),
		func(prefix string) error {
			fmt.Println("deleting", prefix)
			delete(held, prefix)
			return nil
		})
	fmt.Println(deleted, err, len(held))
	// Output:
	// deleting 172.16.0.0/12
	// deleting 192.168.0.0/16
	// 2 <nil> 1
}

// Example reconciles a table of routes into a routing table, and waits
// until the routing table has them.
func Example() {
	db := strata.New()
	routes := strata.MustNewTable(db, "routes", routeByPrefix)
	world := &kernel{routes: map[string]string{}}

	r, err := reconciler.New(db, reconciler.Config[*Route]{
		Table:           routes,
		CloneObject:     (*Route).Clone,
		GetObjectStatus: (*Route).GetStatus,
		SetObjectStatus: (*Route).SetStatus,
		Operations:      world,
	}, reconciler.WithWorkers(4))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, nil) }()

	wtxn := db.WriteTxn(routes)
	if _, _, err := routes.Insert(wtxn, &Route{Prefix: "10.0.0.0/8", NextHop: "eth0", Status: reconciler.StatusPending()}); err != nil {
		panic(err)
	}
	if _, _, err := routes.Insert(wtxn, &Route{Prefix: "10.1.0.0/16", NextHop: "eth1", Status: reconciler.StatusPending()}); err != nil {
		panic(err)
	}
	rev := routes.Revision(wtxn)
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}

	if _, _, err := r.WaitUntilReconciled(ctx, rev); err != nil {
		panic(err)
	}
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}

	world.mu.Lock()
	for _, prefix := range slices.Sorted(maps.Keys(world.routes)) {
		fmt.Println(prefix, "via", world.routes[prefix])
	}
	world.mu.Unlock()
	for route := range routes.All(db.ReadTxn()) {
		fmt.Println(route.Prefix, route.Status.Kind)
	}
	// Output:
	// 10.0.0.0/8 via eth0
	// 10.1.0.0/16 via eth1
	// 10.0.0.0/8 Done
	// 10.1.0.0/16 Done
}

// ExampleWithRoundRateLimit runs a reconciler with statedb's round limit
// (its benchmark's: 1000 rounds a second, bursts of 10): the routes are
// reconciled, in rounds no more frequent than that. A limit out of range
// fails New with ErrInvalidOption.
func ExampleWithRoundRateLimit() {
	db := strata.New()
	routes := strata.MustNewTable(db, "routes", routeByPrefix)
	world := &kernel{routes: map[string]string{}}
	cfg := reconciler.Config[*Route]{
		Table:           routes,
		CloneObject:     (*Route).Clone,
		GetObjectStatus: (*Route).GetStatus,
		SetObjectStatus: (*Route).SetStatus,
		Operations:      world,
	}
	_, err := reconciler.New(db, cfg, reconciler.WithRoundRateLimit(0, 10))
	fmt.Println(errors.Is(err, reconciler.ErrInvalidOption))

	r, err := reconciler.New(db, cfg, reconciler.WithRoundSize(1000), reconciler.WithRoundRateLimit(1000, 10))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, nil) }()
	wtxn := db.WriteTxn(routes)
	for i := range 3 {
		route := &Route{Prefix: fmt.Sprintf("10.%d.0.0/16", i), NextHop: "eth0", Status: reconciler.StatusPending()}
		if _, _, err := routes.Insert(wtxn, route); err != nil {
			panic(err)
		}
	}
	rev := routes.Revision(wtxn)
	if _, err := wtxn.Commit(); err != nil {
		panic(err)
	}
	if _, _, err := r.WaitUntilReconciled(ctx, rev); err != nil {
		panic(err)
	}
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}
	world.mu.Lock()
	fmt.Println(len(world.routes), "routes")
	world.mu.Unlock()
	// Output:
	// true
	// 3 routes
}
