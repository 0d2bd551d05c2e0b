package stratacli

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// kinded is an object of the tables of kindStore, one per kind of
// primary key.
type kinded struct {
	N    int64        `json:"n"`
	U    uint32       `json:"u"`
	Zone string       `json:"zone"`
	Addr netip.Addr   `json:"addr"`
	Pfx  netip.Prefix `json:"pfx"`
	Tags []string     `json:"tags,omitempty"`
}

// kindIndex is a unique index of kinded on key.
func kindIndex(name string, key func(k *kinded) index.Key) strata.Index[*kinded, string] {
	return strata.Index[*kinded, string]{
		Name:       name,
		FromObject: func(k *kinded) index.KeySet { return index.NewKeySet(key(k)) },
		FromKey:    index.String,
		Unique:     true,
	}
}

// kindStore writes five tables of the same six objects, each with a
// primary index of another kind of key: "ints" (int64), "addrs"
// (netip.Addr), "routes" (netip.Prefix), "pairs" (string and uint32,
// composite), "zones" (string, with a secondary index "u").
func kindStore(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	s, err := persist.Open(dir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db := strata.New()
	tables := kindTables(db)
	metas := make([]strata.TableMeta, len(tables))
	for i, tbl := range tables {
		if err := s.Register(persist.Table(tbl, persist.JSON[*kinded]())); err != nil {
			t.Fatal(err)
		}
		metas[i] = tbl
	}
	txn := db.WriteTxn(metas[0], metas[1:]...)
	for i, n := range []int64{-300, -2, 0, 7, 42, 1 << 40} {
		k := &kinded{N: n, U: uint32(i), Zone: []string{"eu", "us"}[i%2],
			Addr: netip.AddrFrom4([4]byte{10, 0, byte(i / 3), byte(i)}),
			Pfx:  netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i), 0, 0}), 16),
			Tags: [][]string{{"a", "b"}, {"b"}, nil}[i%3]}
		for _, tbl := range tables {
			if _, _, err := tbl.Insert(txn, k); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// kindTables creates the tables of kindStore in db.
func kindTables(db *strata.DB) []strata.RWTable[*kinded] {
	byU := kindIndex("u", func(k *kinded) index.Key { return index.Uint32(k.U) })
	return []strata.RWTable[*kinded]{
		strata.MustNewTable(db, "ints", kindIndex("n", func(k *kinded) index.Key { return index.Int64(k.N) })),
		strata.MustNewTable(db, "addrs", kindIndex("addr", func(k *kinded) index.Key { return index.NetIPAddr(k.Addr) })),
		strata.MustNewTable(db, "routes", kindIndex("pfx", func(k *kinded) index.Key { return index.NetIPPrefix(k.Pfx) })),
		strata.MustNewTable(db, "pairs", kindIndex("pair", func(k *kinded) index.Key {
			return index.Composite(index.String(k.Zone), index.Uint32(k.U))
		})),
		strata.MustNewTable(db, "zones", kindIndex("zone", func(k *kinded) index.Key {
			return index.String(k.Zone + "-" + string(rune('a'+k.U)))
		}), byU),
	}
}

// ns returns the "n" of each JSON line of out.
func ns(t *testing.T, out string) []float64 {
	t.Helper()
	var got []float64
	for line := range strings.Lines(out) {
		var row struct {
			Object struct{ N float64 } `json:"object"`
		}
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		got = append(got, row.Object.N)
	}
	return got
}

// TestKeyKinds: the stock command (no type registered) takes keys typed
// as text of the kind --key-format names, for every kind a primary index
// of a store may have, and finds the objects the typed query finds.
func TestKeyKinds(t *testing.T) {
	dir := kindStore(t)
	for _, c := range []struct {
		table string
		args  []string
		want  []float64
	}{
		{"ints", []string{"--key-format", "int64", "--get", "-2"}, []float64{-2}},
		{"ints", []string{"--key-format", "int64", "--from", "-5", "--to", "42"}, []float64{-2, 0, 7}},
		{"ints", []string{"--key-format", "int64", "--lowerbound", "8"}, []float64{42, 1 << 40}},
		{"addrs", []string{"--key-format", "addr", "--get", "10.0.1.4"}, []float64{42}},
		{"addrs", []string{"--key-format", "addr", "--lowerbound", "10.0.1.0"}, []float64{7, 42, 1 << 40}},
		{"routes", []string{"--key-format", "prefix", "--get", "10.3.0.0/16"}, []float64{7}},
		{"pairs", []string{"--key-format", "string,uint32", "--get", "us/3"}, []float64{7}},
		{"pairs", []string{"--key-format", "string,uint32", "--prefix", "eu"}, []float64{-300, 0, 42}},
		{"pairs", []string{"--key-format", "string,uint32", "--key-sep", ":", "--get", "eu:4"}, []float64{42}},
		{"zones", []string{"--key-format", "string", "--prefix", "us-"}, []float64{-2, 7, 1 << 40}},
		{"zones", []string{"--key-format", "string", "--get", "eu-c"}, []float64{0}},
	} {
		args := append([]string{"dump", c.table, "-d", dir, "-o", "jsonl"}, c.args...)
		out, errOut, code := runCmd(t, nil, args...)
		if got := ns(t, out); code != 0 || !equalFloats(got, c.want) {
			t.Errorf("%v: %d %v, want %v\n%s", args, code, got, c.want, errOut)
		}
	}
	// Keys shown as text of the kind too, beside their hex.
	for _, c := range []struct {
		table, format, get, want string
	}{
		{"ints", "int64", "-2", `"key":"-2","key_hex":"7ffffffffffffffe"`},
		{"pairs", "string,uint32", "us/3", `"key":"us/3","key_hex":`},
		{"routes", "prefix", "10.3.0.0/16", `"key":"10.3.0.0/16","key_hex":`},
	} {
		out, errOut, code := runCmd(t, nil, "dump", c.table, "-d", dir, "-o", "jsonl", "--key-format", c.format, "--get", c.get)
		if code != 0 || !strings.Contains(out, c.want) || errOut != "" {
			t.Errorf("dump %s --key-format %s --get %s: %d %q %q, want %s", c.table, c.format, c.get, code, out, errOut, c.want)
		}
	}
	// A kind that is not the key's: noted once, the key column empty.
	out, errOut, code := runCmd(t, nil, "dump", "ints", "-d", dir, "-o", "jsonl", "--key-format", "addr")
	if code != 0 || strings.Count(out, `"key":"",`) != 6 || strings.Count(errOut, "note:") != 1 || !strings.Contains(errOut, "is not a key of kind addr") {
		t.Errorf("ints as addr: %d %q %q", code, out, errOut)
	}
	// get with a kind.
	if out, errOut, code := runCmd(t, nil, "get", "ints", "42", "-d", dir, "--key-format", "int64", "-o", "jsonl"); code != 0 || !equalFloats(ns(t, out), []float64{42}) {
		t.Errorf("get ints 42: %d %q %q", code, out, errOut)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestKeyKindErrors: what the stock command cannot do without a table's
// type fails with a typed error that says why and how to go on.
func TestKeyKindErrors(t *testing.T) {
	dir := kindStore(t)
	snap := filepath.Join(t.TempDir(), "s.snap")
	if _, errOut, code := runCmd(t, nil, "snapshot", "export", snap, "-d", dir); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	for _, c := range []struct {
		args []string
		err  error
		msg  []string
	}{
		// Text without a kind: the store records none.
		{[]string{"dump", "ints", "-d", dir, "--get", "42"}, ErrKeyKindUnknown,
			[]string{`key "42" typed as text`, "--key-format KIND", "int64", "--key-format hex"}},
		{[]string{"get", "ints", "42", "-d", dir}, ErrKeyKindUnknown, []string{"--key-format hex"}},
		// A text that is not of the kind: the kind and the text named.
		{[]string{"dump", "addrs", "-d", dir, "--key-format", "addr", "--get", "10.0.0"}, index.ErrParseKey,
			[]string{`table addrs: key "10.0.0" as addr`, "IP address"}},
		{[]string{"dump", "pairs", "-d", dir, "--key-format", "string,uint32", "--get", "eu/x"}, index.ErrParseKey,
			[]string{"composite part 1", "uint32"}},
		// No such kind.
		{[]string{"dump", "ints", "-d", dir, "--key-format", "integer", "--get", "1"}, ErrUsage,
			[]string{`"integer" is no kind of key`, "int64", "prefix"}},
		{[]string{"dump", "pairs", "-d", dir, "--key-format", "string,uint32", "--key-sep", "", "--get", "eu"}, ErrUsage,
			[]string{"--key-sep"}},
		// A secondary index: not stored.
		{[]string{"dump", "zones", "-d", dir, "--index", "u", "--key-format", "uint32", "--get", "3"}, ErrIndexNotStored,
			[]string{`table zones: a query on index "u" needs the table's type`, "secondary index is computed", "--addr", "WithTable"}},
		{[]string{"dump", "zones", "-f", snap, "--index", "u"}, ErrIndexNotStored, []string{`index "u"`}},
		{[]string{"dump", "zones", "-f", snap, "--key-format", "string", "--get", "eu-a"}, ErrIndexNotStored,
			[]string{"a snapshot records no keys"}},
		// Import: a snapshot has no keys, a store needs them.
		{[]string{"snapshot", "import", snap, "-d", t.TempDir()}, ErrTypeNeeded,
			[]string{"addrs, ints, pairs, routes, zones", "records no primary keys", "stratacli.WithTable"}},
	} {
		cmd := NewCommand()
		var out, errOut strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if !errors.Is(err, c.err) || ExitCode(err) != ExitUsage {
			t.Errorf("%v: %v (exit %d), want %v", c.args, err, ExitCode(err), c.err)
			continue
		}
		for _, m := range c.msg {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%v: %q does not say %q", c.args, err, m)
			}
		}
	}
}
