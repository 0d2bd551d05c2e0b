package replicate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/strata-db/strata"
)

// The linearizability tests of particular cases (linearizable_test.go has
// the harness and the randomised runs): that the harness's check catches
// a stale read, a dirty read of an aborted write, a read-only write's
// staleness, and a verifier that outlives Close.

// TestLinHarnessCatchesStaleRead: the harness's history, checked, refuses
// a read that is not linearizable on a real cluster: puts through the
// harness's write path (recorded as the workload records them) while a
// follower is cut off, then a stale read (ReadTxn) on that follower,
// recorded as a linearizable get. The check must fail, naming the
// visualization.
func TestLinHarnessCatchesStaleRead(t *testing.T) {
	t.Parallel()
	h := newLinHarness(t, 3, 1)
	ld := h.waitLeader()
	cl := &linClient{id: 0, rng: rand.New(rand.NewPCG(1, 2))}
	write := func(v string) {
		if h.write(cl, linInput{Op: linPut, Key: 1, Val: v}) || h.writesOK.Load() == 0 {
			t.Fatalf("put %s: not made", v)
		}
	}
	write("x")
	h.c.converge()
	f := h.c.followers(ld)[0]
	h.cut([]*rnode{f}, h.c.followers(f))
	okBefore := h.writesOK.Load()
	write("y")
	if h.writesOK.Load() != okBefore+1 {
		t.Fatal("the put of y was not acknowledged")
	}
	call := h.now()
	txn, err := f.node.ReadTxn(context.Background())
	must(t, err)
	h.record(porcupine.Operation{ClientId: 1, Input: linInput{Op: linGet, Key: 1}, Call: call,
		Output: linOutput{Val: get(f, txn, 1)}, Return: h.now()})
	h.healAll()
	ft := &fakeTB{TB: t}
	if res := linCheck(ft, h.history, 10*time.Second); res != porcupine.Illegal || len(ft.errors) != 1 {
		t.Fatalf("a stale read on a cut-off follower: %v, %q", res, ft.errors)
	}
	t.Log(ft.errors[0])
	must(t, os.Remove(linVizPath(t, ft.errors[0])))
}

// errCASMismatch is the abort of a compare-and-swap that found another
// value.
var errCASMismatch = errors.New("cas: another value")

// TestLinDirtyReadOfAbortedWrite: a Node.Write whose function reads a key
// and then returns an error, as a compare-and-swap that reports a mismatch
// by aborting does, reports only what was current. It once returned at
// once what it read on the leader's tip, a commit that may never commit:
// here the leader, cut off, takes a put of y that cannot commit; a cas
// expecting x reads y on the tip and aborts; the put ends ambiguous and is
// lost with the old leader's term; every read after it sees x. The cas
// reported a value the key never held, and porcupine refused the history
// (every run, before the fix). Now Write waits for the tips fn read
// (settleTips): the put fails, fn runs again and reads x, and the cas ends
// as the cut-off leader can end it (not the leader, or ambiguous).
func TestLinDirtyReadOfAbortedWrite(t *testing.T) {
	t.Parallel()
	h := newLinHarness(t, 3, 3)
	ld := h.waitLeader()
	const key = 1
	ctx := context.Background()
	op := func(client int, in linInput, out linOutput, call int64) {
		ret := h.now()
		if out.Unknown {
			ret = linUnknownReturn
		}
		h.record(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	}

	call := h.now()
	_, err := put(ctx, ld, key, "x")
	must(t, err)
	op(0, linInput{Op: linPut, Key: key, Val: "x"}, linOutput{}, call)
	h.c.converge()

	h.cut([]*rnode{ld}, h.c.followers(ld))
	putDone := make(chan error, 1)
	putCall := h.now()
	go func() {
		_, err := put(ctx, ld, key, "y")
		putDone <- err
	}()
	// The put's change set is queued once the table is unlocked: the
	// cas's transaction begins from its tip.
	time.Sleep(20 * time.Millisecond)
	casCall := h.now()
	var found string
	_, err = ld.node.Write(ctx, ld.metas[:1], func(txn strata.WriteTxn) error {
		found = get(ld, txn, key)
		if found != "x" {
			return errCASMismatch
		}
		_, _, err := ld.tables[0].Insert(txn, &item{ID: key, Val: "z"})
		return err
	})
	// The cas read y on the tip at first (fn ran again after the put
	// failed: the last run's reads are what it reports).
	switch {
	case errors.Is(err, errCASMismatch):
		op(1, linInput{Op: linCAS, Key: key, Old: "x", Val: "z"}, linOutput{Val: found}, casCall)
	case err == nil:
		op(1, linInput{Op: linCAS, Key: key, Old: "x", Val: "z"}, linOutput{Val: "x"}, casCall)
	case errors.Is(err, ErrAmbiguous):
		op(1, linInput{Op: linCAS, Key: key, Old: "x", Val: "z"}, linOutput{Val: "x", Unknown: true}, casCall)
	default:
		// Not made (the cut-off leader lost the lead): not recorded.
	}
	t.Logf("the cas found %q: %v", found, err)
	err = <-putDone
	if !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("the put on the cut-off leader: %v, want ErrAmbiguous", err)
	}
	op(0, linInput{Op: linPut, Key: key, Val: "y"}, linOutput{Unknown: true}, putCall)

	h.waitNewLeader(ld)
	h.healAll()
	h.c.converge()
	for i, nd := range h.c.live() {
		call := h.now()
		txn := readLinearizable(t, ctx, nd)
		op(2+i, linInput{Op: linGet, Key: key}, linOutput{Val: get(nd, txn, key)}, call)
	}
	t.Logf("the cas found %q; the key now holds %q", found, get(ld, ld.db.ReadTxn(), key))
	linCheck(t, h.history, 10*time.Second)
}

// TestLinReadOnlyWriteIsStale: a Node.Write whose function writes nothing
// is linearizable too. It once committed nothing and returned nil on any
// node, having read the node's local state, which need not be current: no
// leadership check, no read index. Here a follower cut off from the others
// misses an acknowledged put of y; a cas expecting y through it finds x,
// writes nothing, and Write returned nil: the history (put x, put y, then
// a cas that found x) is not linearizable (every run, before the fix). Now
// Write confirms such reads (confirmRead): the follower asks the leader's
// read index, which it cannot reach, and the Write fails instead.
func TestLinReadOnlyWriteIsStale(t *testing.T) {
	t.Parallel()
	h := newLinHarness(t, 3, 2)
	ld := h.waitLeader()
	const key = 1
	ctx := context.Background()
	for _, v := range []string{"x", "y"} {
		if v == "y" {
			f := h.c.followers(ld)[0]
			h.cut([]*rnode{f}, h.c.followers(f))
		}
		call := h.now()
		_, err := put(ctx, ld, key, v)
		must(t, err)
		h.record(porcupine.Operation{ClientId: 0, Input: linInput{Op: linPut, Key: key, Val: v}, Call: call, Output: linOutput{}, Return: h.now()})
		if v == "x" {
			h.c.converge()
		}
	}
	f := h.c.followers(ld)[0]
	call := h.now()
	var found string
	index, err := f.node.Write(ctx, f.metas[:1], func(txn strata.WriteTxn) error {
		found = get(f, txn, key)
		if found == "y" {
			_, _, err := f.tables[0].Insert(txn, &item{ID: key, Val: "z"})
			return err
		}
		return nil // a mismatch: nothing to write
	})
	ret := h.now()
	t.Logf("Write of nothing on the cut-off follower %s: index %d, %v; it found %q", f.id, index, err, found)
	if err == nil {
		h.record(porcupine.Operation{ClientId: 1, Input: linInput{Op: linCAS, Key: key, Old: "y", Val: "z"},
			Call: call, Output: linOutput{Val: found}, Return: ret})
	}
	h.healAll()
	linCheck(t, h.history, 10*time.Second)
}

// TestLinVerifierOutlivesClose: a leader closed while linearizable reads
// run on it leaves no goroutine behind. The linearizability tests found
// that it did: the goroutine that runs a node's VerifyLeader rounds
// (verifier.run, read.go) waited for good on a VerifyLeader future raft
// never answers. The cause is in raft v1.7.2: VerifyLeader sends its
// future on verifyCh, a channel with a buffer of 64 (api.go:568), in a
// select beside shutdownCh (api.go:887); once Shutdown closed shutdownCh
// the main loop stops draining verifyCh, and a future that went into the
// buffer is never answered, and verifyFuture, unlike raft's other futures,
// has no ShutdownCh for its Error to give up on. Before the fix (Node.Close
// stops the verifier, waiting for its round in flight, before raft's
// Shutdown), 5 closes of 20 left the goroutine; after it, none.
func TestLinVerifierOutlivesClose(t *testing.T) {
	t.Parallel()
	leaked, cycles := 0, 20
	if testing.Short() {
		cycles = 6
	}
	for cycle := range cycles {
		t.Run(fmt.Sprint(cycle), func(t *testing.T) {
			c := newRCluster(t, 3)
			ld := c.leader()
			_, err := put(context.Background(), ld, 1, "x")
			must(t, err)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						ctx, cancel := context.WithTimeout(context.Background(), time.Second)
						_, _ = ld.node.ReadLinearizable(ctx)
						cancel()
					}
				}()
			}
			time.Sleep(time.Duration(10+cycle*5) * time.Millisecond)
			c.stop(ld)
			close(stop)
			wg.Wait()
			v := &ld.node.verify
			for deadline := time.Now().Add(3 * time.Second); ; {
				v.mu.Lock()
				running := v.running
				v.mu.Unlock()
				if !running {
					return
				}
				if time.Now().After(deadline) {
					leaked++
					t.Errorf("the closed leader's verifier still runs 3 s after Close (%d rounds)", v.rounds.Load())
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	t.Logf("%d of %d closed leaders left their verifier running", leaked, cycles)
}
