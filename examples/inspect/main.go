// Command inspect serves a live database over HTTP with the web
// inspector: hosts whose load a writer changes ten times a second, and
// jobs it adds. Open the inspector in a browser, query the API with curl,
// or follow a table with the Go client (package remote).
//
//	go run ./examples/inspect -addr 127.0.0.1:8080
//	go run ./examples/inspect -addr unix:/tmp/strata.sock   # a socket of mode 0600
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/remote"
)

// Host is a machine and its load.
type Host struct {
	Name string
	Zone string
	Load int
}

// Job is a unit of work placed on a host.
type Job struct {
	ID   uint64
	Host string
}

var (
	hostByName = strata.Index[*Host, string]{
		Name:       "name",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Name)) },
		FromKey:    index.String,
		Unique:     true,
	}
	hostByZone = strata.Index[*Host, string]{
		Name:       "zone",
		FromObject: func(h *Host) index.KeySet { return index.NewKeySet(index.String(h.Zone)) },
		FromKey:    index.String,
	}
	jobByID = strata.Index[*Job, uint64]{
		Name:       "id",
		FromObject: func(j *Job) index.KeySet { return index.KeySetOf(index.Uint64(j.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	jobByHost = strata.Index[*Job, string]{
		Name:       "host",
		FromObject: func(j *Job) index.KeySet { return index.NewKeySet(index.String(j.Host)) },
		FromKey:    index.String,
	}
)

var zones = []string{"eu", "us", "ap"}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen on host:port, or unix:PATH for a unix socket")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *addr, func(a net.Addr) {
		if a.Network() == "unix" {
			fmt.Printf("serving on unix socket %s (curl --unix-socket %s http://strata/v1/)\n", a, a)
			return
		}
		fmt.Printf("serving on http://%s/ui/\n", a)
	})
	if err != nil {
		log.Fatal(err)
	}
}

// run serves until ctx is done; ready is told the address listened on.
func run(ctx context.Context, addr string, ready func(net.Addr)) error {
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName, hostByZone)
	jobs := strata.MustNewTable(db, "jobs", jobByID, jobByHost)
	wtxn := db.WriteTxn(hosts)
	for i := range 12 {
		if _, _, err := hosts.Insert(wtxn, &Host{Name: fmt.Sprintf("host-%02d", i), Zone: zones[i%3]}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := wtxn.Commit(); err != nil {
		return err
	}

	l, err := listen(addr)
	if err != nil {
		return err
	}
	// The listener decides who may connect (loopback, or a socket of
	// mode 0600): reads and watches, as by default, and no writes.
	h := httpapi.New(db, httpapi.Options{UI: true})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	ready(l.Addr())

	writer := db.NewHandle("writer")
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for i := 0; ; i++ {
		select {
		case <-ticker.C:
		case err := <-served:
			h.Close()
			return err
		case <-ctx.Done():
			// Close ends the change streams, which Shutdown would wait
			// for forever.
			h.Close()
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(shutdown)
		}
		wtxn := writer.WriteTxn(hosts, jobs)
		host := fmt.Sprintf("host-%02d", i%12)
		if _, _, err := hosts.Insert(wtxn, &Host{Name: host, Zone: zones[i%12%3], Load: (i * 7) % 100}); err != nil {
			log.Fatal(err)
		}
		if _, _, err := jobs.Insert(wtxn, &Job{ID: uint64(i), Host: host}); err != nil {
			log.Fatal(err)
		}
		if i >= 200 {
			if _, _, err := jobs.Delete(wtxn, &Job{ID: uint64(i - 200)}); err != nil { // keep 200 jobs
				log.Fatal(err)
			}
		}
		if _, err := wtxn.Commit(); err != nil {
			return err
		}
	}
}

// listen listens on a TCP address, or on a unix socket only its owner
// may connect to.
func listen(addr string) (net.Listener, error) {
	path, ok := remote.SocketPath(addr)
	if !ok {
		return net.Listen("tcp", addr)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}
