package strata_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

type server struct {
	Name   string
	Zone   string
	Status string
}

var (
	serverByName = strata.Index[*server, string]{
		Name:       "name",
		FromObject: func(s *server) index.KeySet { return index.NewKeySet(index.String(s.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	serverByZone = strata.Index[*server, string]{
		Name:       "zone",
		FromObject: func(s *server) index.KeySet { return index.NewKeySet(index.String(s.Zone)) },
		FromKey:    index.String,
	}
	serverByStatus = strata.Index[*server, string]{
		Name:       "status",
		FromObject: func(s *server) index.KeySet { return index.NewKeySet(index.String(s.Status)) },
		FromKey:    index.String,
	}
)

// And, In and Or combine queries of several indexes of one table, or
// several keys of one index, with one watch channel for the whole query.
func ExampleAnd() {
	db := strata.New()
	servers, err := strata.NewTable(db, "servers", serverByName, serverByZone, serverByStatus)
	if err != nil {
		log.Fatal(err)
	}
	wtxn := db.WriteTxn(servers)
	for _, s := range []*server{
		{"s1", "eu", "up"}, {"s2", "eu", "down"}, {"s3", "us", "down"},
		{"s4", "ap", "down"}, {"s5", "eu", "down"},
	} {
		if _, _, err := servers.Insert(wtxn, s); err != nil {
			log.Fatal(err)
		}
	}
	txn, err := wtxn.Commit()
	if err != nil {
		log.Fatal(err)
	}

	// The servers down in eu, in primary-key order.
	down, watch, err := strata.AndWatch(txn, servers, serverByZone.Query("eu"), serverByStatus.Query("down"))
	if err != nil {
		log.Fatal(err)
	}
	for s := range down {
		fmt.Println("down in eu:", s.Name)
	}
	// The servers of us and ap, in zone order.
	in, err := strata.In(txn, servers, serverByZone.Query("us"), serverByZone.Query("ap"))
	if err != nil {
		log.Fatal(err)
	}
	for s := range in {
		fmt.Println("in us or ap:", s.Name, s.Zone)
	}
	// The servers up or in ap, in primary-key order.
	or, err := strata.Or(txn, servers, serverByStatus.Query("up"), serverByZone.Query("ap"))
	if err != nil {
		log.Fatal(err)
	}
	for s := range or {
		fmt.Println("up or in ap:", s.Name)
	}
	// Bad input is an error.
	_, err = strata.In(txn, servers, serverByZone.Query("us"), serverByStatus.Query("up"))
	fmt.Println(errors.Is(err, strata.ErrMixedIndexes))

	// s2 comes up: the And's result changes, and its channel closes.
	wtxn = db.WriteTxn(servers)
	if _, _, err := servers.Insert(wtxn, &server{"s2", "eu", "up"}); err != nil {
		log.Fatal(err)
	}
	if _, err := wtxn.Commit(); err != nil {
		log.Fatal(err)
	}
	<-watch
	fmt.Println("changed")
	// Output:
	// down in eu: s2
	// down in eu: s5
	// in us or ap: s4 ap
	// in us or ap: s3 us
	// up or in ap: s1
	// up or in ap: s4
	// true
	// changed
}
