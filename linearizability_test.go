package strata

// Linearizability tests: concurrent goroutines record a history of
// operations on the database (each with the times it was called and
// returned), and porcupine checks that some sequential order of them,
// consistent with those times, explains every result.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The key-value model: one register per key, partitioned by key.

type linOp uint8

const (
	linPut        linOp = iota // WriteTxn, Insert, Commit
	linDelete                  // WriteTxn, Delete, Commit
	linAbortedPut              // WriteTxn, Insert, Abort: must change nothing
	linGet                     // ReadTxn, Get
)

type linKVInput struct {
	Op    linOp
	Key   uint64
	Value int
}

// linKVOutput is what an operation returned: for put and delete the value
// they replaced or removed, for get the value read. It is also the model's
// state for one key.
type linKVOutput struct {
	Found bool
	Value int
}

var linKVModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[uint64][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(linKVInput).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := slices.Sorted(func(yield func(uint64) bool) {
			for k := range byKey {
				if !yield(k) {
					return
				}
			}
		})
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return linKVOutput{} },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(linKVOutput), input.(linKVInput), output.(linKVOutput)
		switch in.Op {
		case linPut:
			return out == s, linKVOutput{Found: true, Value: in.Value}
		case linDelete:
			return out == s, linKVOutput{}
		default: // linGet, linAbortedPut
			return out == s, s
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linKVInput), output.(linKVOutput)
		res := "absent"
		if out.Found {
			res = fmt.Sprint(out.Value)
		}
		switch in.Op {
		case linPut:
			return fmt.Sprintf("put(%d, %d) -> old %s", in.Key, in.Value, res)
		case linDelete:
			return fmt.Sprintf("delete(%d) -> old %s", in.Key, res)
		case linAbortedPut:
			return fmt.Sprintf("put(%d, %d)+abort -> old %s", in.Key, in.Value, res)
		}
		return fmt.Sprintf("get(%d) -> %s", in.Key, res)
	},
	DescribeState: func(state any) string {
		if s := state.(linKVOutput); s.Found {
			return fmt.Sprint(s.Value)
		}
		return "absent"
	},
}

// linClock returns nanoseconds since the start of the run, from the
// monotonic clock, so that timestamps of different goroutines compare.
func linClock() func() int64 {
	start := time.Now()
	return func() int64 { return int64(time.Since(start)) }
}

// linCheck checks history against model and fails the test, saving a
// visualization of the history, if it is not linearizable or the check
// did not finish in time.
func linCheck(t *testing.T, model porcupine.Model, history []porcupine.Operation, timeout time.Duration) {
	t.Helper()
	start := time.Now()
	// The verbose check waits for all of its goroutines, even when it
	// finds a violation early or times out.
	res, info := porcupine.CheckOperationsVerbose(model, history, timeout)
	t.Logf("checked %d operations in %v: %v", len(history), time.Since(start).Round(time.Millisecond), res)
	if res == porcupine.Ok {
		return
	}
	msg := "not linearizable"
	if res == porcupine.Unknown {
		msg = fmt.Sprintf("linearizability check did not finish within %v", timeout)
	}
	if file, err := os.CreateTemp("", "strata-linearizability-*.html"); err == nil {
		if err := porcupine.Visualize(model, info, file); err == nil {
			msg += "; visualization in " + file.Name()
		}
		if err := file.Close(); err != nil {
			msg += "; closing the visualization: " + err.Error()
		}
	}
	t.Fatal(msg)
}

// runLinKV runs clients goroutines doing ops operations each on keys
// 0..keys-1 of tbl, and returns the history. Gets read the snapshot read()
// returns (normally db.ReadTxn).
func runLinKV(t *testing.T, db *DB, tbl RWTable[*testObject], clients, ops, keys int, read func() ReadTxn) []porcupine.Operation {
	t.Helper()
	seed := concSeed(t)
	now := linClock()
	var nextValue atomic.Int64
	histories := make([][]porcupine.Operation, clients)
	f := &concFailer{t: t}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(c)))
			hist := make([]porcupine.Operation, 0, ops)
			for range ops {
				k := r.Uint64N(uint64(keys))
				in := linKVInput{Key: k}
				var out linKVOutput
				var call, ret int64
				switch x := r.IntN(20); {
				case x < 13:
					in.Op = linGet
					call = now()
					rtxn := read()
					maybeYield(r)
					o, _, found := tbl.Get(rtxn, idIndex.Query(k))
					ret = now()
					if found {
						out = linKVOutput{Found: true, Value: o.Value}
					}
				default:
					in.Op = linPut
					switch x {
					case 17, 18:
						in.Op = linDelete
					case 19:
						in.Op = linAbortedPut
					}
					in.Value = int(nextValue.Add(1))
					call = now()
					txn := db.WriteTxn(tbl)
					var old *testObject
					var had bool
					var err error
					if in.Op == linDelete {
						old, had, err = tbl.Delete(txn, &testObject{ID: k})
					} else {
						old, had, err = tbl.Insert(txn, &testObject{ID: k, Value: in.Value})
					}
					maybeYield(r)
					if in.Op == linAbortedPut {
						txn.Abort()
					} else if _, cerr := txn.Commit(); cerr != nil {
						err = cerr
					}
					ret = now()
					if err != nil {
						f.errorf("%v: %v", in, err)
						return
					}
					if had {
						out = linKVOutput{Found: true, Value: old.Value}
					}
				}
				hist = append(hist, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
			}
			histories[c] = hist
		}()
	}
	wg.Wait()
	if f.stopped() {
		t.FailNow()
	}
	var history []porcupine.Operation
	for _, h := range histories {
		history = append(history, h...)
	}
	return history
}

// TestLinearizableKV: put (WriteTxn+Insert+Commit), delete, put+abort and get
// (ReadTxn+Get) on a few keys from several goroutines form a linearizable
// history of a key-value map.
func TestLinearizableKV(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "lin-kv")
	clients, ops := 6, 2000
	if testing.Short() {
		ops = 1000
	}
	history := runLinKV(t, db, tbl, clients, ops, 4, db.ReadTxn)
	linCheck(t, linKVModel, history, concDuration(8*time.Second, 15*time.Second))
}

// TestLinearizabilityDetectsStaleReads runs the harness of
// TestLinearizableKV against a broken database, whose reads all go to a
// snapshot taken before the first write, and expects porcupine to reject
// the history: the check is wired so that it can fail.
func TestLinearizabilityDetectsStaleReads(t *testing.T) {
	db := New()
	tbl := newTestTable(t, db, "lin-stale")
	stale := db.ReadTxn()
	history := runLinKV(t, db, tbl, 4, 200, 2, func() ReadTxn { return stale })
	res, _ := porcupine.CheckOperationsVerbose(linKVModel, history, 10*time.Second)
	if res != porcupine.Illegal {
		t.Fatalf("reads from a stale snapshot: checker says %v, want Illegal", res)
	}
}

// The transfer model: four accounts, two in a table of *testObject and two
// in a table of concPair, modelled as one register holding every balance.

const linAccounts = 4

type linXferInput struct {
	Read     bool // read every balance from one ReadTxn
	From, To int
	Amount   int
}

type linXferOutput struct {
	OK       bool             // the transfer happened
	Balances [linAccounts]int // Read: the balances read
	After    [linAccounts]int // transfer that happened: the balances in the snapshot Commit returned
}

var linXferInit = [linAccounts]int{100, 100, 100, 100}

var linXferModel = porcupine.Model{
	Init: func() any { return linXferInit },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.([linAccounts]int), input.(linXferInput), output.(linXferOutput)
		if in.Read {
			return out.Balances == s, s
		}
		if s[in.From] < in.Amount {
			return !out.OK, s
		}
		next := s
		next[in.From] -= in.Amount
		next[in.To] += in.Amount
		return out.OK && out.After == next, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linXferInput), output.(linXferOutput)
		if in.Read {
			return fmt.Sprintf("read -> %v", out.Balances)
		}
		return fmt.Sprintf("transfer(%d->%d, %d) -> %v %v", in.From, in.To, in.Amount, out.OK, out.After)
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.([linAccounts]int)) },
}

// TestLinearizableTransfer: transfers that move an amount between two
// accounts in one write transaction (over one or both tables, named in
// random order), and reads of all balances from one ReadTxn, form a
// linearizable history of a single register holding every balance. The
// money in the system never changes, in any snapshot.
func TestLinearizableTransfer(t *testing.T) {
	db := New()
	x := newTestTable(t, db, "lin-x")     // accounts 0, 1
	y := newConcPairTable(t, db, "lin-y") // accounts 2, 3
	txn := db.WriteTxn(x, y)
	for a := range linAccounts {
		setBalance(t, x, y, txn, a, linXferInit[a])
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}

	clients, ops := 4, 1500
	if testing.Short() {
		ops = 750
	}
	seed := concSeed(t)
	now := linClock()
	histories := make([][]porcupine.Operation, clients)
	f := &concFailer{t: t}
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(c)))
			for range ops {
				var in linXferInput
				var out linXferOutput
				var call, ret int64
				if r.IntN(2) == 0 {
					in.Read = true
					call = now()
					rtxn := db.ReadTxn()
					for a := range linAccounts {
						out.Balances[a] = balance(x, y, rtxn, a)
					}
					ret = now()
					sum := 0
					for _, b := range out.Balances {
						sum += b
					}
					if sum != 400 {
						f.errorf("read %v: the balances add up to %d, not 400", out.Balances, sum)
					}
				} else {
					in.From = r.IntN(linAccounts)
					in.To = (in.From + 1 + r.IntN(linAccounts-1)) % linAccounts
					in.Amount = 1 + r.IntN(60)
					var tables []TableMeta
					for _, a := range []int{in.From, in.To} {
						if a < 2 {
							tables = append(tables, x)
						} else {
							tables = append(tables, y)
						}
					}
					r.Shuffle(len(tables), func(i, j int) { tables[i], tables[j] = tables[j], tables[i] })
					call = now()
					txn := db.WriteTxn(tables[0], tables[1:]...)
					from := balance(x, y, txn, in.From)
					if from >= in.Amount {
						setBalance(t, x, y, txn, in.From, from-in.Amount)
						maybeYield(r)
						setBalance(t, x, y, txn, in.To, balance(x, y, txn, in.To)+in.Amount)
						rtxn, err := txn.Commit()
						if err != nil {
							f.errorf("commit: %v", err)
							return
						}
						out.OK = true
						for a := range linAccounts {
							out.After[a] = balance(x, y, rtxn, a)
						}
					} else {
						txn.Abort()
					}
					ret = now()
				}
				histories[c] = append(histories[c], porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
			}
		}()
	}
	wg.Wait()
	if f.stopped() {
		t.FailNow()
	}
	var history []porcupine.Operation
	for _, h := range histories {
		history = append(history, h...)
	}
	linCheck(t, linXferModel, history, concDuration(8*time.Second, 15*time.Second))
}

func balance(x RWTable[*testObject], y RWTable[concPair], txn ReadTxn, account int) int {
	if account < 2 {
		o, _, found := x.Get(txn, idIndex.Query(uint64(account)))
		if !found {
			return -1000
		}
		return o.Value
	}
	o, _, found := y.Get(txn, concPairID.Query(uint64(account)))
	if !found {
		return -1000
	}
	return int(o.Gen)
}

func setBalance(t *testing.T, x RWTable[*testObject], y RWTable[concPair], txn WriteTxn, account, amount int) {
	var err error
	if account < 2 {
		_, _, err = x.Insert(txn, &testObject{ID: uint64(account), Value: amount})
	} else {
		_, _, err = y.Insert(txn, concPair{ID: uint64(account), Gen: uint64(amount)})
	}
	if err != nil {
		t.Error(err)
	}
}

// TestLinearizabilityCheckerRejectsBadHistory feeds the models hand-made
// histories: the non-linearizable ones must be rejected and the
// linearizable ones accepted, so a passing check means something.
func TestLinearizabilityCheckerRejectsBadHistory(t *testing.T) {
	op := func(client int, call, ret int64, in, out any) porcupine.Operation {
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	put := func(k uint64, v int) linKVInput { return linKVInput{Op: linPut, Key: k, Value: v} }
	get := func(k uint64) linKVInput { return linKVInput{Op: linGet, Key: k} }
	val := func(v int) linKVOutput { return linKVOutput{Found: true, Value: v} }
	absent := linKVOutput{}
	xfer := func(from, to, amount int) linXferInput { return linXferInput{From: from, To: to, Amount: amount} }
	read := linXferInput{Read: true}
	done := func(after ...int) linXferOutput { return linXferOutput{OK: true, After: [4]int(after)} }
	balances := func(b ...int) linXferOutput { return linXferOutput{Balances: [4]int(b)} }

	cases := []struct {
		name    string
		model   porcupine.Model
		history []porcupine.Operation
		want    porcupine.CheckResult
	}{
		{"read misses a completed put", linKVModel, []porcupine.Operation{
			op(0, 0, 10, put(1, 5), absent),
			op(1, 20, 30, get(1), absent),
			op(2, 0, 30, put(2, 7), absent), // another key, fine
		}, porcupine.Illegal},
		{"read concurrent with the put may miss it", linKVModel, []porcupine.Operation{
			op(0, 0, 10, put(1, 5), absent),
			op(1, 5, 30, get(1), absent),
			op(1, 40, 50, get(1), val(5)),
		}, porcupine.Ok},
		{"stale read after an overwrite", linKVModel, []porcupine.Operation{
			op(0, 0, 10, put(1, 5), absent),
			op(0, 20, 30, put(1, 6), val(5)),
			op(1, 40, 50, get(1), val(5)),
		}, porcupine.Illegal},
		{"aborted put seen", linKVModel, []porcupine.Operation{
			op(0, 0, 10, linKVInput{Op: linAbortedPut, Key: 1, Value: 5}, absent),
			op(1, 20, 30, get(1), val(5)),
		}, porcupine.Illegal},
		{"two puts both replace the same value", linKVModel, []porcupine.Operation{
			op(0, 0, 10, put(1, 5), absent),
			op(1, 20, 40, put(1, 6), val(5)),
			op(2, 20, 40, put(1, 7), val(5)), // a lost update
		}, porcupine.Illegal},
		{"half a transfer seen by a concurrent read", linXferModel, []porcupine.Operation{
			op(0, 0, 20, xfer(0, 2, 10), done(90, 100, 110, 100)),
			op(1, 5, 15, read, balances(90, 100, 100, 100)),
		}, porcupine.Illegal},
		{"a concurrent read sees a transfer whole or not at all", linXferModel, []porcupine.Operation{
			op(0, 0, 20, xfer(0, 2, 10), done(90, 100, 110, 100)),
			op(1, 5, 15, read, balances(100, 100, 100, 100)),
			op(2, 5, 15, read, balances(90, 100, 110, 100)),
		}, porcupine.Ok},
		{"reads see the transfer in different orders", linXferModel, []porcupine.Operation{
			op(0, 0, 100, xfer(0, 2, 10), done(90, 100, 110, 100)),
			op(1, 5, 15, read, balances(90, 100, 110, 100)),
			op(1, 20, 30, read, balances(100, 100, 100, 100)),
		}, porcupine.Illegal},
		{"a transfer refused with enough money", linXferModel, []porcupine.Operation{
			op(0, 0, 10, xfer(1, 3, 50), linXferOutput{}),
		}, porcupine.Illegal},
		{"commit snapshot misses the transfer", linXferModel, []porcupine.Operation{
			op(0, 0, 10, xfer(1, 3, 50), done(100, 100, 100, 100)),
		}, porcupine.Illegal},
	}
	for _, c := range cases {
		res, _ := porcupine.CheckOperationsVerbose(c.model, c.history, 10*time.Second)
		if res != c.want {
			t.Errorf("%s: checker says %v, want %v", c.name, res, c.want)
		}
	}
}
