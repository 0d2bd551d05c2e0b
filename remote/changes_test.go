package remote

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/httpapi"
)

// replica applies a table's Changes to a map, in a goroutine, as a
// consumer of the stream would: a relist starts the map afresh at its
// bookmark.
type replica struct {
	mu      sync.Mutex
	state   map[string]Host
	listing map[string]Host // nil outside a listing
	relists int
	events  []Change[*Host]
	err     error

	cancel context.CancelFunc
	done   chan struct{}
}

func follow(t *testing.T, tbl *Table[*Host], from strata.Revision) *replica {
	ctx, cancel := context.WithCancel(t.Context())
	r := &replica{state: map[string]Host{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ch, err := range tbl.Changes(ctx, from) {
			r.mu.Lock()
			r.events = append(r.events, ch)
			switch {
			case err != nil:
				r.err = err
			case ch.Kind == ChangeRelist:
				r.relists++
				r.listing = map[string]Host{}
			case ch.Kind == ChangeBookmark && r.listing != nil:
				r.state, r.listing = r.listing, nil
			case ch.Kind == ChangeUpsert && r.listing != nil:
				r.listing[ch.Key] = *ch.Object
			case ch.Kind == ChangeUpsert:
				r.state[ch.Key] = *ch.Object
			case ch.Kind == ChangeDelete:
				delete(r.state, ch.Key)
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

// holds waits until the replica holds want, and returns its relists.
func (r *replica) holds(t *testing.T, want map[string]Host) int {
	t.Helper()
	eventually(t, "the replica to hold the server's hosts", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.err != nil {
			t.Fatalf("the stream failed: %v", r.err)
		}
		return r.listing == nil && maps.Equal(r.state, want)
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.relists
}

// revisions returns the revisions of the changes delivered outside
// listings.
func (r *replica) revisions() []strata.Revision {
	r.mu.Lock()
	defer r.mu.Unlock()
	var revs []strata.Revision
	listing := false
	for _, ch := range r.events {
		switch ch.Kind {
		case ChangeRelist:
			listing = true
		case ChangeBookmark:
			listing = false
		case ChangeUpsert, ChangeDelete:
			if !listing {
				revs = append(revs, ch.Revision)
			}
		}
	}
	return revs
}

// TestChangesResume: a stream whose connection is cut reconnects and
// resumes where it stopped: no listing again, no change twice.
func TestChangesResume(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	s.insert(sixHosts()...)
	r := follow(t, NewTable[*Host](s.client(t), "hosts"), 0)
	r.holds(t, s.contents())
	for i := range 5 {
		s.insert(&Host{Name: fmt.Sprint("c", i), Zone: "ap"})
		s.srv.CloseClientConnections()
		s.remove("a" + fmt.Sprint(i%3+1))
		s.insert(&Host{Name: "a" + fmt.Sprint(i%3+1), Zone: "eu", Up: i%2 == 0})
	}
	if relists := r.holds(t, s.contents()); relists != 1 {
		t.Fatalf("%d listings for connections cut with the ring intact", relists)
	}
	revs := r.revisions()
	for i := 1; i < len(revs); i++ {
		if revs[i] <= revs[i-1] {
			t.Fatalf("revisions go back, or repeat: %v", revs)
		}
	}
	if st := s.h.Stats(); st.Served < 2 {
		t.Fatalf("stats %+v: the client did not reconnect", st)
	}
}

// TestChangesRelistRingMovedOn: a client away while the server's ring
// moved past where it stopped gets 410 and lists again, and then holds
// the table as it is, deletes while it was away included.
func TestChangesRelistRingMovedOn(t *testing.T) {
	s := newServer(t, httpapi.Options{RingSize: 4})
	s.insert(sixHosts()...)
	r := follow(t, NewTable[*Host](s.client(t), "hosts"), 0)
	r.holds(t, s.contents())
	s.gate.Store(true)
	s.srv.CloseClientConnections()
	s.remove("a1", "b2")
	for i := range 10 {
		s.insert(&Host{Name: fmt.Sprint("c", i), Zone: "ap"})
	}
	s.ringTookAll(t)
	s.gate.Store(false)
	if relists := r.holds(t, s.contents()); relists != 2 {
		t.Fatalf("%d listings, want 2 (the first, and after the 410)", relists)
	}
}

// TestChangesRelistRestart: a client of a server that restarted (another
// instance, with another history) lists again, whether the new server's
// revision is below or above the one it resumes from.
func TestChangesRelistRestart(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	s.insert(sixHosts()...)
	r := follow(t, NewTable[*Host](s.client(t), "hosts"), 0)
	r.holds(t, s.contents())
	s.restart()
	s.insert(&Host{Name: "z1", Zone: "new"}) // revision 1 < 6
	if relists := r.holds(t, s.contents()); relists != 2 {
		t.Fatalf("after a restart to a lower revision: %d listings", relists)
	}
	s.restart()
	for i := range 10 {
		s.insert(&Host{Name: fmt.Sprint("y", i), Zone: "newer"}) // revision 10 > 1
	}
	if relists := r.holds(t, s.contents()); relists != 3 {
		t.Fatalf("after a restart to a higher revision: %d listings", relists)
	}
}

// TestChangesFrom: a stream from a revision sends the changes after it,
// without a listing; a stream of a table that does not exist fails.
func TestChangesFrom(t *testing.T) {
	s := newServer(t, httpapi.Options{})
	rev := s.insert(sixHosts()...)
	tbl := NewTable[*Host](s.client(t), "hosts")
	r := follow(t, tbl, 0) // keeps the ring alive
	r.holds(t, s.contents())
	s.insert(&Host{Name: "c1"})
	var got []string
	for ch, err := range tbl.Changes(t.Context(), rev) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ch.Kind.String()+" "+ch.Key)
		if ch.Kind == ChangeUpsert {
			break
		}
	}
	if len(got) != 1 || got[0] != "upsert c1" {
		t.Fatalf("from %d: %v", rev, got)
	}
	n := 0
	for _, err := range NewTable[*Host](s.client(t), "nope").Changes(t.Context(), 0) {
		if !errors.Is(err, strata.ErrTableNotFound) {
			t.Fatalf("a table that does not exist: %v", err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d errors", n)
	}
	// A cancelled context ends the iteration without an error.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	for ch, err := range tbl.Changes(ctx, 0) {
		if err != nil {
			t.Fatalf("after cancel: %v", err)
		}
		if ch.Kind == ChangeBookmark {
			cancel()
		}
	}
}
