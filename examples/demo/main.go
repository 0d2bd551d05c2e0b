// Command demo shows Strata at work: two tables with secondary indexes, a
// transaction over both, queries by every index, a watcher goroutine that
// reacts to commits, snapshot isolation and a refused write.
//
//	go run ./examples/demo
package main

import (
	"errors"
	"fmt"
	"log"
	"net/netip"
	"sync"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// Service is a named service in a namespace.
type Service struct {
	Namespace string
	Name      string
	Labels    part.Map[string, string]
}

// Endpoint is a named address serving a service.
type Endpoint struct {
	Name    string
	Addr    netip.Addr
	Service string // "namespace/name"
	Ready   bool
}

func (s *Service) key() string { return s.Namespace + "/" + s.Name }

var (
	serviceByKey = strata.Index[*Service, string]{
		Name:       "key",
		FromObject: func(s *Service) index.KeySet { return index.NewKeySet(index.String(s.key())) },
		FromKey:    index.String,
		Unique:     true,
	}
	serviceByLabel = strata.Index[*Service, string]{
		Name: "label",
		FromObject: func(s *Service) index.KeySet {
			var keys []index.Key
			for k, v := range s.Labels.All() {
				keys = append(keys, index.String(k+"="+v))
			}
			return index.NewKeySet(keys...)
		},
		FromKey: index.String,
	}
	endpointByName = strata.Index[*Endpoint, string]{
		Name:       "name",
		FromObject: func(e *Endpoint) index.KeySet { return index.NewKeySet(index.String(e.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	// A unique secondary index: no two endpoints may share an address.
	endpointByAddr = strata.Index[*Endpoint, netip.Addr]{
		Name:       "addr",
		FromObject: func(e *Endpoint) index.KeySet { return index.NewKeySet(index.NetIPAddr(e.Addr)) },
		FromKey:    index.NetIPAddr,
		Unique:     true,
	}
	endpointByService = strata.Index[*Endpoint, string]{
		Name:       "service",
		FromObject: func(e *Endpoint) index.KeySet { return index.NewKeySet(index.String(e.Service)) },
		FromKey:    index.String,
	}
)

func main() {
	db := strata.New()
	services, err := strata.NewTable(db, "services", serviceByKey, serviceByLabel)
	check(err)
	endpoints, err := strata.NewTable(db, "endpoints", endpointByName, endpointByAddr, endpointByService)
	check(err)

	// One transaction over both tables: readers see all of it or none.
	wtxn := db.WriteTxn(services, endpoints)
	for _, s := range []*Service{
		{Namespace: "shop", Name: "cart", Labels: part.FromMap(map[string]string{"tier": "backend"})},
		{Namespace: "shop", Name: "web", Labels: part.FromMap(map[string]string{"tier": "frontend"})},
		{Namespace: "ops", Name: "metrics", Labels: part.FromMap(map[string]string{"tier": "backend"})},
	} {
		_, _, err := services.Insert(wtxn, s)
		check(err)
	}
	for i, svc := range []string{"shop/cart", "shop/cart", "shop/web", "ops/metrics"} {
		ep := &Endpoint{Name: fmt.Sprintf("ep-%d", i), Addr: netip.AddrFrom4([4]byte{10, 0, 0, byte(10 + i)}), Service: svc, Ready: true}
		_, _, err := endpoints.Insert(wtxn, ep)
		check(err)
	}
	snapshot, err := wtxn.Commit()
	check(err)
	fmt.Printf("committed: %d services, %d endpoints\n",
		services.NumObjects(snapshot), endpoints.NumObjects(snapshot))

	fmt.Println("\nbackend services (non-unique, multi-key label index):")
	for s := range services.List(snapshot, serviceByLabel.Query("tier=backend")) {
		fmt.Println("  ", s.key())
	}
	fmt.Println("services in namespace shop (prefix scan):")
	for s := range services.Prefix(snapshot, serviceByKey.Query("shop/")) {
		fmt.Println("  ", s.key())
	}
	fmt.Println("endpoints from 10.0.0.11 to 10.0.0.13, highest address first (reverse range):")
	from, to := netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.0.13")
	for e, rev := range endpoints.ReverseRange(snapshot, endpointByAddr.Query(from), endpointByAddr.Query(to)) {
		fmt.Printf("   %s %s -> %s (revision %d)\n", e.Name, e.Addr, e.Service, rev)
	}

	// A controller: watches the endpoints of shop/cart and reports each
	// change, until told to stop.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	seen := make(chan int)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			txn := db.ReadTxn()
			eps, watch := endpoints.ListWatch(txn, endpointByService.Query("shop/cart"))
			ready := 0
			for e := range eps {
				if e.Ready {
					ready++
				}
			}
			fmt.Printf("[controller] shop/cart has %d ready endpoints\n", ready)
			seen <- ready
			select {
			case <-watch:
			case <-stop:
				return
			}
		}
	}()
	<-seen

	// Mark one cart endpoint not ready: the controller wakes up.
	wtxn = db.WriteTxn(endpoints)
	ep, _, _ := endpoints.Get(wtxn, endpointByAddr.Query(netip.MustParseAddr("10.0.0.10")))
	updated := *ep // never modify a stored object: change a copy
	updated.Ready = false
	_, _, err = endpoints.Insert(wtxn, &updated)
	check(err)
	_, err = wtxn.Commit()
	check(err)
	<-seen

	// A new endpoint with a taken address is refused by the unique index,
	// and the table is left as it was.
	wtxn = db.WriteTxn(endpoints)
	_, _, err = endpoints.Insert(wtxn, &Endpoint{Name: "ep-9", Addr: netip.MustParseAddr("10.0.0.12"), Service: "shop/web"})
	fmt.Printf("\ninserting ep-9 at the address of ep-2: %v\n", err)
	if !errors.Is(err, strata.ErrUniqueConstraint) {
		log.Fatal("expected ErrUniqueConstraint")
	}
	fmt.Printf("endpoints in the transaction after the refused insert: %d\n", endpoints.NumObjects(wtxn))
	wtxn.Abort()

	// The first snapshot still shows the world as it was when taken.
	old, _, _ := endpoints.Get(snapshot, endpointByAddr.Query(netip.MustParseAddr("10.0.0.10")))
	now, _, _ := endpoints.Get(db.ReadTxn(), endpointByAddr.Query(netip.MustParseAddr("10.0.0.10")))
	fmt.Printf("10.0.0.10 ready: %v in the old snapshot, %v now\n", old.Ready, now.Ready)

	close(stop)
	wg.Wait()
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
