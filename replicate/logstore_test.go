package replicate

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// TestLogStore runs the log store's contract, case by case: each case
// runs its operations on a new store, checks the log it leaves, then
// closes and reopens the store and checks the log again.
func TestLogStore(t *testing.T) {
	t.Parallel()
	type step struct {
		op      logOp
		wantErr error // nil: the step must succeed
	}
	s := func(lo, hi, term uint64) step { return step{op: logOp{kind: 's', lo: lo, hi: hi, term: term}} }
	d := func(lo, hi uint64) step { return step{op: logOp{kind: 'd', lo: lo, hi: hi}} }
	refused := func(st step) step { st.wantErr = ErrNotContiguous; return st }
	for _, tc := range []struct {
		name  string
		steps []step
		want  logModel
	}{
		{"empty", nil, logModel{}},
		{"one", []step{s(1, 1, 1)}, logModel{1, []uint64{1}}},
		{"appends", []step{s(1, 5, 1), s(6, 6, 1), s(7, 20, 2)}, model(1, 5, 1, 6, 6, 1, 7, 20, 2)},
		{"first entry above 1", []step{s(100, 110, 3)}, model(100, 110, 3)},
		{"head truncation", []step{s(1, 20, 1), d(1, 10)}, model(11, 20, 1)},
		{"head truncation from below the log", []step{s(5, 20, 1), d(0, 7)}, model(8, 20, 1)},
		{"tail truncation", []step{s(1, 20, 1), d(15, 20)}, model(1, 14, 1)},
		{"tail truncation past the log", []step{s(1, 20, 1), d(15, 1<<64-1)}, model(1, 14, 1)},
		{"tail truncation then append in a new term", []step{s(1, 20, 1), d(15, 20), s(15, 18, 2)}, model(1, 14, 1, 15, 18, 2)},
		{"delete all", []step{s(1, 20, 1), d(1, 20)}, logModel{}},
		{"delete all, then a new log", []step{s(1, 20, 1), d(1, 20), s(21, 22, 2)}, model(21, 22, 2)},
		{"delete outside the log", []step{s(10, 20, 1), d(1, 5), d(25, 30), d(9, 3)}, model(10, 20, 1)},
		{"overwrite a suffix", []step{s(1, 20, 1), s(15, 16, 2)}, model(1, 14, 1, 15, 16, 2)},
		{"overwrite from the first", []step{s(5, 20, 1), s(5, 6, 2)}, model(5, 6, 2)},
		{"overwrite from below the first", []step{s(5, 20, 1), s(2, 30, 2)}, model(2, 30, 2)},
		{"a gap starts a new log", []step{s(1, 20, 1), s(50, 55, 2)}, model(50, 55, 2)},
		{"hole inside refused", []step{s(1, 20, 1), refused(d(5, 10))}, model(1, 20, 1)},
		{"entries out of order refused", []step{s(1, 3, 1), refused(step{op: logOp{kind: 'x'}})}, model(1, 3, 1)},
		{"index 0 refused", []step{refused(s(0, 2, 1))}, logModel{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t, nil, dir)
			for _, step := range tc.steps {
				var err error
				if step.op.kind == 'x' {
					err = st.StoreLogs([]*raft.Log{entryFor(4, 1), entryFor(6, 1)})
				} else {
					err = step.op.run(st)
				}
				if !errors.Is(err, step.wantErr) || (err == nil) != (step.wantErr == nil) {
					t.Fatalf("%v: %v, want %v", step.op, err, step.wantErr)
				}
			}
			check := func(when string) {
				t.Helper()
				got, err := readModel(st)
				if err != nil {
					t.Fatalf("%s: %v", when, err)
				}
				if !got.equal(tc.want) {
					t.Fatalf("%s: log %v %v, want %v %v", when, got, got.terms, tc.want, tc.want.terms)
				}
			}
			check("before reopening")
			closeStore(t, st)
			st = openStore(t, nil, dir)
			defer closeStore(t, st)
			check("after reopening")
		})
	}
}

// model returns the model of runs lo..hi in term, given as triples.
func model(runs ...uint64) logModel {
	var m logModel
	for i := 0; i+2 < len(runs); i += 3 {
		if len(m.terms) == 0 {
			m.first = runs[i]
		}
		for range runs[i+1] - runs[i] + 1 {
			m.terms = append(m.terms, runs[i+2])
		}
	}
	return m
}

// TestLogStoreEntries: an entry reads back exactly as stored, every field,
// nil and empty slices apart; StoreLog stores one.
func TestLogStoreEntries(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil, t.TempDir())
	defer closeStore(t, st)
	ls := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: []byte("config")},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte{}, Extensions: []byte{}},
		{Index: 3, Term: 1 << 63, Type: raft.LogBarrier},
		{Index: 4, Term: 2, Type: raft.LogNoop, Data: make([]byte, 1<<20), Extensions: []byte("x")},
		entryFor(5, 2),
	}
	ls[4].AppendedAt = ls[4].AppendedAt.Add(123456789)
	must(t, st.StoreLogs(ls[:4]))
	must(t, st.StoreLog(ls[4]))
	for _, want := range ls {
		var got raft.Log
		must(t, st.GetLog(want.Index, &got))
		if !sameEntry(&got, want) || got.AppendedAt != want.AppendedAt {
			t.Errorf("entry %d: got %+v, want %+v", want.Index, got, *want)
		}
	}
	var l raft.Log
	for _, i := range []uint64{0, 6, 1 << 40} {
		if err := st.GetLog(i, &l); err != raft.ErrLogNotFound {
			t.Errorf("GetLog(%d): %v, want raft.ErrLogNotFound", i, err)
		}
	}
}

// TestLogStoreEmpty: an empty store reads 0 and 0, and no entry.
func TestLogStoreEmpty(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil, t.TempDir())
	defer closeStore(t, st)
	if first, last := bounds(t, st); first != 0 || last != 0 {
		t.Fatalf("empty store: first %d, last %d", first, last)
	}
	var l raft.Log
	if err := st.GetLog(1, &l); err != raft.ErrLogNotFound {
		t.Fatalf("GetLog(1): %v", err)
	}
	must(t, st.DeleteRange(1, 10))
	must(t, st.StoreLogs(nil))
}

// TestStableStore: values round-trip and survive a reopen; a missing key
// is ErrKeyNotFound, whose text raft compares with "not found".
func TestStableStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, nil, dir)
	if v, err := st.Get([]byte("nope")); err == nil || err.Error() != "not found" || v != nil {
		t.Fatalf("Get of a missing key: %q, %v", v, err)
	}
	if v, err := st.GetUint64([]byte("nope")); !errors.Is(err, ErrKeyNotFound) || v != 0 {
		t.Fatalf("GetUint64 of a missing key: %d, %v", v, err)
	}
	must(t, st.Set([]byte("LastVoteCand"), []byte("node-1")))
	must(t, st.Set([]byte("empty"), nil))
	must(t, st.SetUint64([]byte("CurrentTerm"), 7))
	must(t, st.SetUint64([]byte("CurrentTerm"), 1<<63+5))
	must(t, st.SetUint64([]byte("zero"), 0))
	check := func() {
		t.Helper()
		if v, err := st.Get([]byte("LastVoteCand")); err != nil || string(v) != "node-1" {
			t.Errorf("Get: %q, %v", v, err)
		}
		if v, err := st.Get([]byte("empty")); err != nil || len(v) != 0 {
			t.Errorf("Get of an empty value: %q, %v", v, err)
		}
		if v, err := st.GetUint64([]byte("CurrentTerm")); err != nil || v != 1<<63+5 {
			t.Errorf("GetUint64: %d, %v", v, err)
		}
		if v, err := st.GetUint64([]byte("zero")); err != nil || v != 0 {
			t.Errorf("GetUint64 of 0: %d, %v", v, err)
		}
		if _, err := st.GetUint64([]byte("LastVoteCand")); err == nil {
			t.Errorf("GetUint64 of a 6-byte value: no error")
		}
	}
	check()
	// The stable keys live beside the log, not in it.
	must(t, st.StoreLogs(entries(1, 3, 1)))
	must(t, st.DeleteRange(1, 3))
	closeStore(t, st)
	st = openStore(t, nil, dir)
	defer closeStore(t, st)
	check()
	if first, last := bounds(t, st); first != 0 || last != 0 {
		t.Fatalf("log %d..%d, want empty", first, last)
	}
	// raft's own check of a node's state reads CurrentTerm, missing in a
	// fresh store: api.go:464-472 takes ErrKeyNotFound for "no state".
	fresh := openStore(t, nil, t.TempDir())
	defer closeStore(t, fresh)
	snaps := raft.NewInmemSnapshotStore()
	if ok, err := raft.HasExistingState(fresh, fresh, snaps); err != nil || ok {
		t.Errorf("HasExistingState of a fresh store: %v, %v", ok, err)
	}
	if ok, err := raft.HasExistingState(fresh, st, snaps); err != nil || !ok {
		t.Errorf("HasExistingState with a current term: %v, %v", ok, err)
	}
}

// TestClosed: every method of a closed store returns ErrClosed, and none
// panics.
func TestClosed(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil, t.TempDir())
	must(t, st.StoreLogs(entries(1, 3, 1)))
	closeStore(t, st)
	var l raft.Log
	_, errFirst := st.FirstIndex()
	_, errLast := st.LastIndex()
	_, errGet := st.Get([]byte("k"))
	_, errGetUint := st.GetUint64([]byte("k"))
	for name, err := range map[string]error{
		"FirstIndex":  errFirst,
		"LastIndex":   errLast,
		"GetLog":      st.GetLog(1, &l),
		"StoreLog":    st.StoreLog(entryFor(4, 1)),
		"StoreLogs":   st.StoreLogs(entries(4, 5, 1)),
		"DeleteRange": st.DeleteRange(1, 2),
		"Set":         st.Set([]byte("k"), []byte("v")),
		"SetUint64":   st.SetUint64([]byte("k"), 1),
		"Get":         errGet,
		"GetUint64":   errGetUint,
		"Close":       st.Close(),
	} {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}
