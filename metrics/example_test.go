package metrics_test

import (
	"fmt"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/metrics"
)

type Host struct {
	Name string
	Zone string
}

var hostByName = strata.Index[*Host, string]{
	Name:       "name",
	FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// A database reporting to expvar. With publish true the figures appear on
// /debug/vars under "strata" (import _ "net/http/pprof" or serve
// expvar.Handler()); here they are read directly.
func ExampleExpVar() {
	ev := metrics.NewExpVar("strata", false)
	db := strata.New(strata.WithMetrics(ev))
	hosts, err := strata.NewTable(db, "hosts", hostByName)
	if err != nil {
		panic(err)
	}

	txn := db.WriteTxn(hosts)
	if _, _, err := hosts.Insert(txn, &Host{Name: "a1", Zone: "eu"}); err != nil {
		panic(err)
	}
	if _, _, err := hosts.Insert(txn, &Host{Name: "b1", Zone: "us"}); err != nil {
		panic(err)
	}
	if _, err := txn.Commit(); err != nil {
		panic(err)
	}

	txn = db.WriteTxn(hosts)
	if _, _, err := hosts.Delete(txn, &Host{Name: "a1"}); err != nil {
		panic(err)
	}
	txn.Abort()

	v, _ := ev.Values("hosts")
	fmt.Println("objects:", v.Objects)
	fmt.Println("revision:", v.Revision)
	fmt.Println("committed:", v.Committed, "aborted:", v.Aborted)
	fmt.Println("lock waits:", v.LockWaits, "held > 0:", v.HeldTotal > 0)
	// Output:
	// objects: 2
	// revision: 2
	// committed: 1 aborted: 1
	// lock waits: 2 held > 0: true
}
