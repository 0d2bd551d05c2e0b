package main

import (
	"context"
	"fmt"
	"iter"
	"log"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
)

// Greeting is a desired line on the screen; Status is the reconciler's.
type Greeting struct {
	Name   string
	Status reconciler.Status
}

var byName = strata.Index[*Greeting, string]{
	Name:       "name",
	FromObject: func(g *Greeting) index.KeySet { return index.NewKeySet(index.String(g.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// screen is the outside world.
type screen struct{}

func (screen) Update(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, g *Greeting) error {
	fmt.Println("hello,", g.Name)
	return nil
}

func (screen) Delete(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, g *Greeting) error {
	fmt.Println("goodbye,", g.Name)
	return nil
}

func (screen) Prune(ctx context.Context, txn strata.ReadTxn, desired iter.Seq2[*Greeting, strata.Revision]) error {
	return nil // a screen holds nothing to prune
}

func main() {
	db := strata.New()
	greetings := strata.MustNewTable(db, "greetings", byName)
	r, err := reconciler.New(db, reconciler.Config[*Greeting]{
		Table:           greetings,
		CloneObject:     func(g *Greeting) *Greeting { c := *g; return &c },
		GetObjectStatus: func(g *Greeting) reconciler.Status { return g.Status },
		SetObjectStatus: func(g *Greeting, s reconciler.Status) *Greeting { g.Status = s; return g },
		Operations:      screen{},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx, nil) }()

	wtxn := db.WriteTxn(greetings)
	if _, _, err := greetings.Insert(wtxn, &Greeting{Name: "world", Status: reconciler.StatusPending()}); err != nil {
		log.Fatal(err)
	}
	rev := greetings.Revision(wtxn)
	if _, err := wtxn.Commit(); err != nil {
		log.Fatal(err)
	}

	// The reconciler prints "hello, world".
	if _, _, err := r.WaitUntilReconciled(ctx, rev); err != nil {
		log.Fatal(err)
	}
	g, _, _ := greetings.Get(db.ReadTxn(), byName.Query("world"))
	fmt.Println(g.Name, g.Status.Kind) // world Done
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}
}
