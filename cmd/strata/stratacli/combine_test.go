package stratacli

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/persist"
)

// TestCombineCommands: and, in and or show what strata.And, In and Or
// return, in their orders, each object once: offline in a store and a
// snapshot of a registered table, and online, run by the server.
func TestCombineCommands(t *testing.T) {
	dir, snap := tenHosts(t) // h00..h09; zones eu (0, 3, 6, 9), us (1, 4, 7), ap (2, 5, 8)
	typed := []Option{WithTable("hosts", persist.JSON[*host](), hostByName, hostByZoneMulti)}
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"and", "hosts", "zone=eu", "name=h03"}, []string{"h03"}},
		{[]string{"and", "hosts", "zone=eu", "h04"}, nil},
		{[]string{"and", "hosts", "zone=us", "zone=us"}, []string{"h01", "h04", "h07"}},
		{[]string{"in", "hosts", "zone=us", "zone=ap", "zone=us"}, []string{"h02", "h05", "h08", "h01", "h04", "h07"}},
		{[]string{"in", "hosts", "h07", "=h01", "name=h05"}, []string{"h01", "h05", "h07"}},
		{[]string{"or", "hosts", "zone=ap", "h00", "name=h05"}, []string{"h00", "h02", "h05", "h08"}},
		{[]string{"or", "hosts", "zone=ap", "zone=mars"}, []string{"h02", "h05", "h08"}},
		{[]string{"or", "hosts", "--key-format", "string", "zone=ap"}, []string{"h02", "h05", "h08"}},
		{[]string{"or", "hosts", "--key-format", "hex", "zone=6170"}, []string{"h02", "h05", "h08"}},
	}
	for _, c := range cases {
		for _, src := range [][]string{{"-d", dir}, {"-f", snap}} {
			got, _ := page(t, typed, append(c.args, src...)...)
			if !slices.Equal(got, c.want) {
				t.Errorf("%v %v: %v, want %v", c.args, src, got, c.want)
			}
		}
	}

	s := newAPIServer(t, httpapi.Options{}) // a1 (eu), b1 (us)
	s.insert(t, &host{"a2", "eu"}, &host{"c1", "ap"}, &host{"c2", "ap"})
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"and", "hosts", "zone=eu", "name=a2"}, []string{"a2"}},
		{[]string{"in", "hosts", "zone=us", "zone=ap"}, []string{"c1", "c2", "b1"}},
		{[]string{"or", "hosts", "zone=ap", "a1"}, []string{"a1", "c1", "c2"}},
		{[]string{"or", "hosts", "--key-format", "string", "zone=us", "a2"}, []string{"a2", "b1"}},
	} {
		got, _ := page(t, nil, append(c.args, "--addr", s.srv.URL)...)
		if !slices.Equal(got, c.want) {
			t.Errorf("online %v: %v, want %v", c.args, got, c.want)
		}
	}
	// The table output has the rows too.
	if out, errOut, code := runCmd(t, nil, "and", "hosts", "zone=ap", "c2", "--addr", s.srv.URL); code != 0 || !strings.Contains(out, "c2") || strings.Contains(out, "c1") {
		t.Errorf("and, table output: exit %d, %q, %q", code, out, errOut)
	}
}

// TestCombineCommandErrors: each bad query is a usage error (exit 2)
// offline and online, with the error's text; and without a registered
// type, offline, the command says the type is needed.
func TestCombineCommandErrors(t *testing.T) {
	dir, snap := tenHosts(t)
	typed := []Option{WithTable("hosts", persist.JSON[*host](), hostByName, hostByZoneMulti)}
	s := newAPIServer(t, httpapi.Options{})
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"and", "hosts"}, "no queries"},
		{[]string{"or", "hosts"}, "no queries"},
		{[]string{"in", "hosts", "zone=eu", "h01"}, "queries on different indexes"},
		{[]string{"and", "hosts", "zone=eu", "nope=x"}, `index "nope"`},
		{[]string{"in", "hosts", "--key-format", "hex", "zone=zz"}, "not hex"},
		{[]string{"or", "hosts", "--key-format", "nokind", "zone=eu"}, "no kind of key"},
		{[]string{"and"}, "takes TABLE"},
	} {
		for _, src := range [][]string{{"-d", dir}, {"-f", snap}, {"--addr", s.srv.URL}} {
			_, errOut, code := runCmd(t, typed, append(c.args, src...)...)
			if code != ExitUsage || !strings.Contains(errOut, c.want) {
				t.Errorf("%v %v: exit %d, %q; want exit %d saying %q", c.args, src, code, errOut, ExitUsage, c.want)
			}
		}
	}
	for _, src := range [][]string{{"-d", dir}, {"-f", snap}} {
		_, errOut, code := runCmd(t, nil, append([]string{"and", "hosts", "zone=eu"}, src...)...)
		if code != ExitUsage || !strings.Contains(errOut, "needs table hosts's type") {
			t.Errorf("untyped %v: exit %d, %q; want a usage error saying the type is needed", src, code, errOut)
		}
	}
	if _, errOut, code := runCmd(t, typed, "or", "nope", "zone=eu", "--addr", s.srv.URL); code != ExitNotFound {
		t.Errorf("online, an unknown table: exit %d, %q; want %d", code, errOut, ExitNotFound)
	}
	// A Remote that cannot combine queries.
	plain := WithRemote(func(ctx context.Context, addr string) (Remote, error) {
		r, err := HTTPDialer()(ctx, addr)
		return struct{ Remote }{r}, err
	})
	if _, errOut, code := runCmd(t, []Option{plain}, "or", "hosts", "zone=eu", "--addr", s.srv.URL); code != ExitUsage || !strings.Contains(errOut, "RemoteCombiner") {
		t.Errorf("a Remote that cannot combine: exit %d, %q", code, errOut)
	}
}
