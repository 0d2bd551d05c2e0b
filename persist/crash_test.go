package persist

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/internal/crashchild"
)

var (
	longRun     = flag.Bool("persist.long", false, "run the long crash and power-loss tests (1000 kill cycles)")
	crashCycles = flag.Int("persist.cycles", 0, "kill cycles of TestCrash (default 100, 1000 with -persist.long)")
)

// The bank workload, shared by the crash, power-loss and error tests: two
// tables with a secondary index each, and a deterministic sequence of
// transactions, each touching several objects of both tables. Transaction
// seq is a pure function of (bankSeed, seq), so a model replays the
// sequence to know the exact state after any prefix of it.
//
//   - accounts: account 0 holds the sequence number of the last
//     transaction (Seq); accounts 1..bankAccounts hold balances that
//     transactions move between them (their sum never changes); index
//     "balance" (not unique).
//   - transfers: one record per transaction, keyed by its sequence
//     number; some transactions delete an older record, some delete all;
//     index "from" (not unique).
const (
	bankAccounts = 20
	bankInitial  = 1000
	bankSeed     = 0x5eed
)

type account struct {
	ID      uint64
	Balance int64
	Seq     uint64 // the transaction that last wrote the account
}

func (a *account) AppendBinary(b []byte) ([]byte, error) {
	b = binary.AppendUvarint(b, a.ID)
	b = binary.AppendVarint(b, a.Balance)
	return binary.AppendUvarint(b, a.Seq), nil
}

func (a *account) UnmarshalBinary(b []byte) error {
	var n [3]int
	a.ID, n[0] = binary.Uvarint(b)
	if n[0] <= 0 {
		return errors.New("account: malformed")
	}
	a.Balance, n[1] = binary.Varint(b[n[0]:])
	if n[1] <= 0 {
		return errors.New("account: malformed")
	}
	a.Seq, n[2] = binary.Uvarint(b[n[0]+n[1]:])
	if n[2] <= 0 || n[0]+n[1]+n[2] != len(b) {
		return errors.New("account: malformed")
	}
	return nil
}

type transfer struct {
	Seq      uint64
	From, To uint64
	Amount   int64
}

var (
	accountByID = strata.Index[*account, uint64]{
		Name:       "id",
		FromObject: func(a *account) index.KeySet { return index.NewKeySet(index.Uint64(a.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	accountByBalance = strata.Index[*account, int64]{
		Name:       "balance",
		FromObject: func(a *account) index.KeySet { return index.NewKeySet(index.Int64(a.Balance)) },
		FromKey:    index.Int64,
	}
	transferBySeq = strata.Index[*transfer, uint64]{
		Name:       "seq",
		FromObject: func(t *transfer) index.KeySet { return index.NewKeySet(index.Uint64(t.Seq)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	transferByFrom = strata.Index[*transfer, uint64]{
		Name:       "from",
		FromObject: func(t *transfer) index.KeySet { return index.NewKeySet(index.Uint64(t.From)) },
		FromKey:    index.Uint64,
	}
)

// bankPlan is what transaction seq does.
type bankPlan struct {
	seq       uint64
	create    bool // the first transaction: create the accounts
	moves     []bankMove
	deleteAll bool   // delete every transfer first
	deleteOld uint64 // delete this transfer, if not 0
}

type bankMove struct {
	from, to uint64
	amount   int64
}

func planOf(seq uint64) bankPlan {
	p := bankPlan{seq: seq}
	if seq == 1 {
		p.create = true
		return p
	}
	rng := rand.New(rand.NewPCG(bankSeed, seq))
	for range 1 + rng.IntN(3) {
		from := 1 + rng.Uint64N(bankAccounts)
		to := 1 + (from+rng.Uint64N(bankAccounts-1))%bankAccounts
		p.moves = append(p.moves, bankMove{from, to, 1 + rng.Int64N(100)})
	}
	p.deleteAll = seq%101 == 0
	if seq%5 == 0 && seq > 10 {
		p.deleteOld = seq - 10
	}
	return p
}

func (p bankPlan) transfer() *transfer {
	t := &transfer{Seq: p.seq}
	if len(p.moves) > 0 {
		t.From, t.To, t.Amount = p.moves[0].from, p.moves[0].to, p.moves[0].amount
	}
	return t
}

// bankModel is the state the bank tables must hold.
type bankModel struct {
	accounts  map[uint64]account
	transfers map[uint64]transfer
}

func newBankModel() *bankModel {
	return &bankModel{accounts: map[uint64]account{}, transfers: map[uint64]transfer{}}
}

func (m *bankModel) apply(p bankPlan) {
	if p.create {
		for id := uint64(1); id <= bankAccounts; id++ {
			m.accounts[id] = account{ID: id, Balance: bankInitial, Seq: p.seq}
		}
	}
	for _, mv := range p.moves {
		f, t := m.accounts[mv.from], m.accounts[mv.to]
		f.Balance, f.Seq = f.Balance-mv.amount, p.seq
		m.accounts[mv.from] = f
		t.Balance, t.Seq = t.Balance+mv.amount, p.seq
		m.accounts[mv.to] = t
	}
	if p.deleteAll {
		clear(m.transfers)
	}
	if p.deleteOld != 0 {
		delete(m.transfers, p.deleteOld)
	}
	m.transfers[p.seq] = *p.transfer()
	m.accounts[0] = account{ID: 0, Seq: p.seq}
}

// bankModelAt returns the model after transactions 1..seq.
func bankModelAt(seq uint64) *bankModel {
	m := newBankModel()
	for i := uint64(1); i <= seq; i++ {
		m.apply(planOf(i))
	}
	return m
}

// bank is the bank tables of one database, registered with a store.
type bank struct {
	db        *strata.DB
	accounts  strata.RWTable[*account]
	transfers strata.RWTable[*transfer]
}

func openBank(s *Store) (*bank, error) {
	b := &bank{db: strata.New()}
	b.accounts = strata.MustNewTable(b.db, "accounts", accountByID, accountByBalance)
	b.transfers = strata.MustNewTable(b.db, "transfers", transferBySeq, transferByFrom)
	err := s.Register(
		Table(b.accounts, Binary[account]()),
		Table(b.transfers, JSON[*transfer]()))
	return b, err
}

// seq returns the sequence number of the last transaction in the tables.
func (b *bank) seq(txn strata.ReadTxn) uint64 {
	a, _, ok := b.accounts.Get(txn, accountByID.Query(0))
	if !ok {
		return 0
	}
	return a.Seq
}

// run commits transaction p.
func (b *bank) run(p bankPlan) (strata.ReadTxn, error) {
	txn := b.db.WriteTxn(b.accounts, b.transfers)
	defer txn.Abort()
	if p.create {
		for id := uint64(1); id <= bankAccounts; id++ {
			if _, _, err := b.accounts.Insert(txn, &account{ID: id, Balance: bankInitial, Seq: p.seq}); err != nil {
				return nil, err
			}
		}
	}
	for _, mv := range p.moves {
		for id, delta := range map[uint64]int64{mv.from: -mv.amount, mv.to: mv.amount} {
			a, _, ok := b.accounts.Get(txn, accountByID.Query(id))
			if !ok {
				return nil, fmt.Errorf("account %d missing", id)
			}
			c := *a
			c.Balance += delta
			c.Seq = p.seq
			if _, _, err := b.accounts.Insert(txn, &c); err != nil {
				return nil, err
			}
		}
	}
	if p.deleteAll {
		if err := b.transfers.DeleteAll(txn); err != nil {
			return nil, err
		}
	}
	if p.deleteOld != 0 {
		if _, _, err := b.transfers.Delete(txn, &transfer{Seq: p.deleteOld}); err != nil {
			return nil, err
		}
	}
	if _, _, err := b.transfers.Insert(txn, p.transfer()); err != nil {
		return nil, err
	}
	if _, _, err := b.accounts.Insert(txn, &account{ID: 0, Seq: p.seq}); err != nil {
		return nil, err
	}
	return txn.Commit()
}

// check compares the tables with the model of the transactions they say
// they hold, checks the invariants and the secondary indexes, and returns
// that sequence number.
func (b *bank) check(txn strata.ReadTxn) (uint64, error) {
	seq := b.seq(txn)
	want := bankModelAt(seq)
	return seq, b.checkModel(txn, want)
}

func (b *bank) checkModel(txn strata.ReadTxn, want *bankModel) error {
	accounts := map[uint64]account{}
	var sum int64
	arev := b.accounts.Revision(txn)
	for a, rev := range b.accounts.All(txn) {
		accounts[a.ID] = *a
		if a.ID != 0 {
			sum += a.Balance
		}
		if rev > arev || rev == 0 {
			return fmt.Errorf("account %d at revision %d, table at %d", a.ID, rev, arev)
		}
		found := false
		for o := range b.accounts.List(txn, accountByBalance.Query(a.Balance)) {
			found = found || o == a
		}
		if !found {
			return fmt.Errorf("account %d not found under its balance %d", a.ID, a.Balance)
		}
	}
	if n := countAll(b.accounts.Prefix(txn, accountByBalance.QueryKey(nil))); n != len(accounts) {
		return fmt.Errorf("balance index holds %d accounts, primary %d", n, len(accounts))
	}
	if len(accounts) > 1 && sum != bankAccounts*bankInitial {
		return fmt.Errorf("balances sum to %d, want %d", sum, bankAccounts*bankInitial)
	}
	transfers := map[uint64]transfer{}
	trev := b.transfers.Revision(txn)
	for t, rev := range b.transfers.All(txn) {
		transfers[t.Seq] = *t
		if rev > trev || rev == 0 {
			return fmt.Errorf("transfer %d at revision %d, table at %d", t.Seq, rev, trev)
		}
		found := false
		for o := range b.transfers.List(txn, transferByFrom.Query(t.From)) {
			found = found || o == t
		}
		if !found {
			return fmt.Errorf("transfer %d not found under its account %d", t.Seq, t.From)
		}
	}
	if n := countAll(b.transfers.Prefix(txn, transferByFrom.QueryKey(nil))); n != len(transfers) {
		return fmt.Errorf("from index holds %d transfers, primary %d", n, len(transfers))
	}
	if !maps.Equal(accounts, want.accounts) {
		return fmt.Errorf("accounts differ from the model:\n got %v\nwant %v", accounts, want.accounts)
	}
	if !maps.Equal(transfers, want.transfers) {
		return fmt.Errorf("transfers differ from the model:\n got %v\nwant %v", transfers, want.transfers)
	}
	for _, t := range []strata.TableMeta{b.accounts, b.transfers} {
		if ok, _ := t.Initialized(txn); !ok {
			return fmt.Errorf("table %s not initialized", t.Name())
		}
	}
	return nil
}

func countAll[A, B any](seq func(func(A, B) bool)) int {
	n := 0
	for range seq {
		n++
	}
	return n
}

// childCrash is the crash test's child: it opens the store in dir in the
// given sync mode, registers the bank, and runs the transactions that
// follow the last one stored, forever, printing "ack SEQ REVA REVT" after
// each commit returns. The parent kills it.
//
// With stamped (TestBufferedLossAge), each ack line ends with the time it
// was written (Unix nanoseconds), and the child prints "sync START END"
// when a periodic sync starts (END 0) and when it ends.
func childCrash(dir string, mode SyncMode, stamped bool) {
	fail := func(err error) {
		fmt.Printf("error %v\n", err)
		os.Exit(1)
	}
	if stamped {
		// Set before Open, so that every periodic sync is reported.
		testHookSync = func(start, end time.Time) {
			e := int64(0)
			if !end.IsZero() {
				e = end.UnixNano()
			}
			_, _ = os.Stdout.WriteString("sync " + strconv.FormatInt(start.UnixNano(), 10) + " " + strconv.FormatInt(e, 10) + "\n") // the parent checks what it reads
		}
	}
	s, err := Open(dir, Options{Sync: mode, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		fail(err)
	}
	b, err := openBank(s)
	if err != nil {
		fail(err)
	}
	seq := b.seq(b.db.ReadTxn())
	fmt.Printf("ready %d\n", seq)
	stamp := ""
	for seq++; ; seq++ {
		r, err := b.run(planOf(seq))
		if err != nil {
			fail(err)
		}
		if stamped {
			stamp = " " + strconv.FormatInt(time.Now().UnixNano(), 10)
		}
		// One write per line: a pipe takes it whole (a lost line is an ack
		// the parent misses).
		_, _ = os.Stdout.WriteString("ack " + strconv.FormatUint(seq, 10) + " " +
			strconv.FormatUint(b.accounts.Revision(r), 10) + " " +
			strconv.FormatUint(b.transfers.Revision(r), 10) + stamp + "\n")
	}
}

// ack is an acknowledgement line of the crash child; at is when it was
// written (Unix nanoseconds), if the child stamps its lines.
type ack struct {
	seq, revA, revT uint64
	at              int64
}

func parseAck(line string) (ack, bool) {
	f := strings.Fields(line)
	if len(f) != 4 && len(f) != 5 || f[0] != "ack" {
		return ack{}, false
	}
	var a ack
	var err [4]error
	a.seq, err[0] = strconv.ParseUint(f[1], 10, 64)
	a.revA, err[1] = strconv.ParseUint(f[2], 10, 64)
	a.revT, err[2] = strconv.ParseUint(f[3], 10, 64)
	if len(f) == 5 {
		a.at, err[3] = strconv.ParseInt(f[4], 10, 64)
	}
	return a, errors.Join(err[:]...) == nil
}

// isAck reports whether line is an acknowledgement (crashchild's IsAck).
func isAck(line string) bool {
	_, ok := parseAck(line)
	return ok
}

// TestCrash kills a writer process with SIGKILL at random moments and
// checks, after each kill, that the store holds every acknowledged
// transaction, at most the one in flight beyond them, none half applied,
// with secondary indexes equal to a rebuild and revisions that keep
// growing.
func TestCrash(t *testing.T) { testCrash(t, false, crashCycleCount(1000, 100, 10)) }

// TestCrashBuffered is TestCrash in Buffered mode, where a killed process
// may lose its last acknowledged transactions: what the store holds must
// still be a prefix of the transactions, each whole.
func TestCrashBuffered(t *testing.T) { testCrash(t, true, crashCycleCount(200, 20, 5)) }

func crashCycleCount(long, normal, short int) int {
	switch {
	case *crashCycles > 0:
		return *crashCycles
	case *longRun:
		return long
	case testing.Short():
		return short
	}
	return normal
}

// testCrash runs the kill cycles and logs their figures: cycles,
// transactions acknowledged and checked after the kill that ended their
// cycle, and violations (a recovered state that is not the model of the
// acknowledged transactions, or of one more; in Buffered mode, of a prefix
// of them), each also reported as an error.
func testCrash(t *testing.T, buffered bool, cycles int) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var (
		last       ack                // the last transaction acknowledged (or recovered)
		acked      = map[uint64]ack{} // the acknowledgements of the transactions stored
		checked    int                // acknowledged transactions checked after a kill
		inFlight   int                // cycles whose unacknowledged transaction survived
		lost       int                // acknowledged transactions lost (Buffered)
		noAck      int                // cycles killed before their first ack
		torn       int                // cycles whose kill tore a record (dropped, no warning)
		violations int
		start      = time.Now()
	)
	violation := func(format string, args ...any) {
		violations++
		t.Errorf(format, args...)
	}
	for cycle := range cycles {
		acks, err := crashCycle(dir, buffered, rng)
		if err != nil {
			t.Fatalf("cycle %d: %v", cycle, err)
		}
		if len(acks) == 0 {
			noAck++
		}
		checked += len(acks)
		for _, a := range acks {
			if a.seq != last.seq+1 || a.revA <= last.revA || a.revT <= last.revT {
				violation("cycle %d: ack %+v after %+v", cycle, a, last)
			}
			last, acked[a.seq] = a, a
		}

		got, tornTail, err := recoverCrashed(t, dir, cycle)
		if err != nil {
			violation("%v", err)
		}
		if tornTail {
			torn++
		}
		switch want, ok := acked[got.seq]; {
		case got.seq == last.seq+1:
			inFlight++
			if got.revA <= last.revA || got.revT <= last.revT {
				violation("cycle %d: in-flight transaction recovered at %+v, after %+v", cycle, got, last)
			}
		case got.seq > last.seq || !buffered && got.seq < last.seq:
			violation("cycle %d: recovered transaction %d; last acknowledged %d", cycle, got.seq, last.seq)
		case ok && got != want:
			violation("cycle %d: transaction %d recovered at revisions %+v, acknowledged at %+v", cycle, got.seq, got, want)
		}
		for seq := got.seq + 1; seq <= last.seq; seq++ {
			delete(acked, seq)
			lost++
		}
		last, acked[got.seq] = got, got
	}
	t.Logf("%d kill cycles in %v (%d before the first ack): %d acknowledged transactions checked after their kill, "+
		"%d of them lost, %d in-flight ones survived whole; %d records torn by the kill, dropped without a warning; %d violations",
		cycles, time.Since(start).Round(time.Millisecond), noAck, checked, lost, inFlight, torn, violations)
}

// recoverCrashed opens the store in dir, checks the bank against the model
// of the transactions it holds, and returns the last one's sequence number
// and table revisions; the error is the check's (a violation).
//
// A process killed with SIGKILL damages nothing it wrote: the store must
// not warn of what its log's recovery dropped (a warning that every kill -9
// raised would be ignored the day it is true), so such a warning is a
// violation too. torn
// reports whether recovery dropped a record the kill tore (logged at Info
// level).
func recoverCrashed(t *testing.T, dir string, cycle int) (_ ack, torn bool, err error) {
	t.Helper()
	var logs syncBuffer
	s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatalf("cycle %d: reopen: %v", cycle, err)
	}
	defer s.Close()
	b, err := openBank(s)
	if err != nil {
		t.Fatalf("cycle %d: register: %v", cycle, err)
	}
	txn := b.db.ReadTxn()
	seq, err := b.check(txn)
	if err != nil {
		err = fmt.Errorf("cycle %d: recovered transaction %d: %w", cycle, seq, err)
	}
	out := logs.String()
	if w := recoveryWarnings(out); len(w) != 0 {
		err = errors.Join(err, fmt.Errorf("cycle %d: recovery after a SIGKILL warned:\n%s", cycle, strings.Join(w, "")))
	}
	torn = strings.Contains(out, "torn by the crash")
	return ack{seq: seq, revA: b.accounts.Revision(txn), revT: b.transfers.Revision(txn)}, torn, err
}

// crashCycle runs the child on dir, kills it at a random moment, and
// returns the acknowledgements it printed.
func crashCycle(dir string, buffered bool, rng *rand.Rand) ([]ack, error) {
	mode := "crash"
	if buffered {
		mode = "crash-buffered"
	}
	// One kill in ten comes within 30ms of the start, which may fall
	// during Open or Register; the others within 20ms of the first
	// acknowledgement, in the middle of the commits.
	r, err := crashchild.Run(crashchild.Options{
		Env:   []string{childEnv + "=" + mode, childDirEnv + "=" + dir},
		IsAck: isAck,
		Kill:  crashchild.RandomKill(rng, 30*time.Millisecond, 20*time.Millisecond),
	})
	var acks []ack
	for _, line := range r.Lines {
		if a, ok := parseAck(line); ok {
			acks = append(acks, a)
		}
	}
	return acks, err
}
