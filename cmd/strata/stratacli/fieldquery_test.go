package stratacli

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// TestByField: --by queries a JSON table of unknown type, in a store and
// in a snapshot, on keys computed from its objects' fields: one field, a
// composite of two, an array's elements; objects of one key in primary
// key order.
func TestByField(t *testing.T) {
	dir := kindStore(t)
	snap := filepath.Join(t.TempDir(), "k.snap")
	if _, errOut, code := runCmd(t, nil, "snapshot", "export", snap, "-d", dir); code != 0 {
		t.Fatalf("export: %d %s", code, errOut)
	}
	for _, c := range []struct {
		table string
		args  []string
		want  []float64
	}{
		{"zones", []string{"--by", "zone:string", "--get", "eu"}, []float64{-300, 0, 42}},
		{"zones", []string{"--by", "u:uint32", "--from", "1", "--to", "4"}, []float64{-2, 0, 7}},
		{"zones", []string{"--by", "u:uint32", "--to", "2"}, []float64{-300, -2}},
		{"zones", []string{"--by", "zone:string,u:uint32", "--prefix", "us"}, []float64{-2, 7, 1 << 40}},
		{"zones", []string{"--by", "zone:string,u:uint32", "--lowerbound", "eu/3"}, []float64{42, -2, 7, 1 << 40}},
		{"zones", []string{"--by", "tags:string", "--get", "b"}, []float64{-300, 42, -2, 7}},
		{"zones", []string{"--by", "tags:string"}, []float64{-300, 7, -300, 42, -2, 7}},
		{"zones", []string{"--by", "u:uint32", "--key-format", "hex", "--get", "00000003"}, []float64{7}},
		{"ints", []string{"--by", "n:int64", "--lowerbound", "0", "--limit", "3"}, []float64{0, 7, 42}},
		{"addrs", []string{"--by", "addr:addr", "--get", "10.0.1.4"}, []float64{42}},
	} {
		for _, src := range [][]string{{"-d", dir}, {"-f", snap}} {
			args := append(append([]string{"dump", c.table, "-o", "jsonl"}, src...), c.args...)
			out, errOut, code := runCmd(t, nil, args...)
			if got := ns(t, out); code != 0 || !equalFloats(got, c.want) || strings.Contains(errOut, "next page") {
				t.Errorf("%v: %d %v, want %v\n%s", args, code, got, c.want, errOut)
			}
		}
	}
	if out, _, code := runCmd(t, nil, "get", "zones", "us", "-d", dir, "--by", "zone:string", "-o", "jsonl"); code != 0 || !equalFloats(ns(t, out), []float64{-2}) {
		t.Errorf("get zones us --by zone:string: %d %q", code, out)
	}
	if _, errOut, _ := runCmd(t, nil, "dump", "zones", "-d", dir, "--by", "u:uint32", "--limit", "2"); !strings.Contains(errOut, "more objects follow, and --by has no cursors") {
		t.Errorf("--by --limit 2 of 6: %q", errOut)
	}
	// Objects without the field are left out, and counted.
	if out, errOut, code := runCmd(t, nil, "dump", "zones", "-d", dir, "--by", "tags:string", "--get", "a"); code != 0 || strings.Count(out, "\n") != 3 ||
		!strings.Contains(errOut, "note: table zones: 2 objects without a value at tags:string left out") {
		t.Errorf("--by tags: %d %q %q", code, out, errOut)
	}
}

// TestByFieldRefused: --by where it cannot be, with the reason.
func TestByFieldRefused(t *testing.T) {
	dir := kindStore(t)
	bin := benchSnapshotSmall(t)
	registered := []Option{WithTable("zones", persist.JSON[*kinded](), kindIndex("zone", func(k *kinded) index.Key {
		return index.String(k.Zone + "-" + string(rune('a'+k.U)))
	}))}
	for _, c := range []struct {
		opts []Option
		args []string
		err  error
		msg  string
	}{
		{nil, []string{"dump", "zones", "-d", dir, "--by", "zone:int64", "--get", "1"}, ErrUsage, `--by zone:int64: the object at revision 1: field "zone"`},
		{nil, []string{"dump", "zones", "-d", dir, "--by", "zone:string", "--index", "u"}, ErrUsage, "--index or --by"},
		{nil, []string{"dump", "zones", "-d", dir, "--by", "zone:string", "--after", "AAAA"}, ErrUsage, "no cursors"},
		{nil, []string{"dump", "zones", "-d", dir, "--by", "zone"}, ErrUsage, "is not FIELD:KIND"},
		{nil, []string{"dump", "zones", "-d", dir, "--by", "u:uint32", "--get", "x"}, index.ErrParseKey, `key "x" as uint32`},
		{nil, []string{"dump", "zones", "--addr", "http://127.0.0.1:1", "--by", "u:uint32"}, ErrUsage, "--by reads the fields of stored objects"},
		{nil, []string{"dump", "binary", "-f", bin, "--by", "id:uint64"}, ErrIndexNotStored, "codec is binary"},
		{registered, []string{"dump", "zones", "-d", dir, "--by", "zone:string"}, ErrUsage, "type is registered"},
	} {
		cmd := NewCommand(c.opts...)
		var out, errOut strings.Builder
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SetArgs(c.args)
		err := cmd.Execute()
		if ExitCode(err) != ExitUsage || !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: %v (exit %d), want %q", c.args, err, ExitCode(err), c.msg)
		}
	}
}
