package stratacli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/strata-db/strata/httpapi"
	"github.com/strata-db/strata/persist"
)

// TestCountCommand: count prints how many rows dump shows for the same query,
// offline (a store, a snapshot: counted by reading) and online (counted
// by the server, or by reading through a Remote that cannot count), with
// -o json saying how; --limit and --after are refused.
func TestCountCommand(t *testing.T) {
	dir, snap := tenHosts(t)
	typed := []Option{WithTable("hosts", persist.JSON[*host](), hostByName, hostByZoneMulti)}
	for _, c := range []struct {
		name string
		opts []Option
		args []string
	}{
		{"store", nil, []string{"-d", dir}},
		{"store typed", typed, []string{"-d", dir}},
		{"store prefix", typed, []string{"-d", dir, "--prefix", "h0"}},
		{"store range", nil, []string{"-d", dir, "--key-format", "hex", "--from", "683031", "--to", "683039"}},
		{"store secondary list", typed, []string{"-d", dir, "--index", "zone", "--get", "eu"}},
		{"store none", typed, []string{"-d", dir, "--get", "nope"}},
		{"snapshot typed", typed, []string{"-f", snap}},
		{"snapshot secondary", typed, []string{"-f", snap, "--index", "zone", "--lowerbound", "eu"}},
	} {
		rows, _ := page(t, c.opts, append([]string{"dump", "hosts"}, c.args...)...)
		out, errOut, code := runCmd(t, c.opts, append([]string{"count", "hosts"}, c.args...)...)
		if n, err := strconv.Atoi(strings.TrimSpace(out)); code != 0 || err != nil || n != len(rows) {
			t.Errorf("%s: count printed %q (exit %d, %s), dump showed %d rows", c.name, out, code, errOut, len(rows))
		}
		out, _, code = runCmd(t, c.opts, append([]string{"count", "hosts", "-o", "json"}, c.args...)...)
		var res countResult
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Count != len(rows) || res.Counted != "read" || res.Table != "hosts" {
			t.Errorf("%s: -o json: %q (exit %d), want a count of %d, read", c.name, out, code, len(rows))
		}
	}

	s := newAPIServer(t, httpapi.Options{})
	s.insert(t, &host{"a2", "eu"}, &host{"a3", "eu"}, &host{"c1", "ap"})
	for _, args := range [][]string{
		nil,
		{"--prefix", "a"},
		{"--index", "zone", "--get", "eu"},
		{"--index", "zone", "--lowerbound", "eu"},
		{"--get", "zz"},
	} {
		rows, _ := page(t, nil, append([]string{"dump", "hosts", "--addr", s.srv.URL, "-o", "jsonl"}, args...)...)
		out, errOut, code := runCmd(t, nil, append([]string{"count", "hosts", "--addr", s.srv.URL, "-o", "json"}, args...)...)
		var res countResult
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Count != len(rows) || res.Counted != "server" || res.Revision == 0 {
			t.Errorf("online %v: %q (exit %d, %s), want a count of %d by the server, with a revision", args, out, code, errOut, len(rows))
		}
		// A Remote that cannot count: the command reads the objects.
		reading := WithRemote(func(ctx context.Context, addr string) (Remote, error) {
			r, err := HTTPDialer()(ctx, addr)
			return struct{ Remote }{r}, err
		})
		out, errOut, code = runCmd(t, []Option{reading}, append([]string{"count", "hosts", "--addr", s.srv.URL, "-o", "json"}, args...)...)
		res = countResult{}
		if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Count != len(rows) || res.Counted != "read" {
			t.Errorf("online %v through a Remote that cannot count: %q (exit %d, %s), want %d, read", args, out, code, errOut, len(rows))
		}
	}

	for _, args := range [][]string{{"--limit", "3"}, {"--after", "aDAy"}} {
		if _, errOut, code := runCmd(t, nil, append([]string{"count", "hosts", "-d", dir}, args...)...); code != ExitUsage || !strings.Contains(errOut, "--limit and --after") {
			t.Errorf("count %v: exit %d, %q; want a usage error", args, code, errOut)
		}
	}
}
