package reconciler_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/reconciler"
	"gopkg.in/yaml.v3"
)

func TestStatusConstructors(t *testing.T) {
	seen := map[uint64]bool{}
	for _, tc := range []struct {
		s    reconciler.Status
		kind reconciler.StatusKind
		name string
	}{
		{reconciler.StatusPending(), reconciler.StatusKindPending, "Pending"},
		{reconciler.StatusRefreshing(), reconciler.StatusKindRefreshing, "Refreshing"},
		{reconciler.StatusDone(), reconciler.StatusKindDone, "Done"},
		{reconciler.StatusError(errors.New("boom")), reconciler.StatusKindError, "Error"},
	} {
		if tc.s.Kind != tc.kind || tc.s.Kind.String() != tc.name {
			t.Errorf("kind %v (%q), want %q", tc.s.Kind, tc.s.Kind.String(), tc.name)
		}
		if tc.s.ID == 0 || seen[tc.s.ID] {
			t.Errorf("%s: ID %d is zero or repeated", tc.name, tc.s.ID)
		}
		seen[tc.s.ID] = true
		if tc.s.UpdatedAt.IsZero() {
			t.Errorf("%s: no UpdatedAt", tc.name)
		}
	}
	e := reconciler.StatusError(errors.New("boom"))
	if e.GetError() != "boom" || e.Attempts != 1 || !strings.Contains(e.String(), "boom") {
		t.Errorf("StatusError = %+v (%s)", e, e)
	}
	if p := reconciler.StatusPending(); !p.IsPendingOrRefreshing() || p.GetError() != "" {
		t.Errorf("pending %+v", p)
	}
	if d := reconciler.StatusDone(); d.IsPendingOrRefreshing() {
		t.Error("Done is pending")
	}
	if reconciler.StatusError(nil).GetError() != "<nil>" {
		t.Error("StatusError(nil)")
	}
}

func TestStatusKindText(t *testing.T) {
	for _, k := range []reconciler.StatusKind{reconciler.StatusKindUnset, reconciler.StatusKindPending,
		reconciler.StatusKindRefreshing, reconciler.StatusKindDone, reconciler.StatusKindError} {
		b, err := k.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back reconciler.StatusKind
		if err := back.UnmarshalText(b); err != nil || back != k {
			t.Errorf("%q: got %v, %v", b, back, err)
		}
		if len(k.Key()) != 1 {
			t.Errorf("Key(%v) = %q", k, k.Key())
		}
	}
	var k reconciler.StatusKind
	if err := k.UnmarshalText([]byte("Bogus")); err == nil {
		t.Error("unknown kind accepted")
	}
}

func TestStatusEncodings(t *testing.T) {
	msg := "it failed"
	statuses := []reconciler.Status{
		{},
		reconciler.StatusPending(),
		reconciler.StatusDone(),
		{Kind: reconciler.StatusKindError, UpdatedAt: time.Unix(1700000000, 123), Error: &msg, ID: 1<<60 + 5, Attempts: 7, Terminal: true},
	}
	for _, s := range statuses {
		b, err := s.AppendBinary([]byte("prefix"))
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := reconciler.DecodeStatus(append(b[len("prefix"):], "suffix"...))
		if err != nil || n != len(b)-len("prefix") {
			t.Fatalf("DecodeStatus: n %d, %v", n, err)
		}
		if !sameStatus(got, s) {
			t.Errorf("binary round trip: %+v, want %+v", got, s)
		}
		var u reconciler.Status
		if err := u.UnmarshalBinary(b[len("prefix"):]); err != nil || !sameStatus(u, s) {
			t.Errorf("UnmarshalBinary: %+v, %v", u, err)
		}
		j, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var js reconciler.Status
		if err := json.Unmarshal(j, &js); err != nil || !sameStatus(js, s) {
			t.Errorf("JSON round trip of %s: %+v, %v", j, js, err)
		}
	}
	// Bad input is an error, never a panic.
	good, _ := statuses[3].AppendBinary(nil)
	for i := range good {
		if _, _, err := reconciler.DecodeStatus(good[:i]); !errors.Is(err, reconciler.ErrStatusEncoding) {
			t.Errorf("truncated to %d bytes: %v", i, err)
		}
	}
	var s reconciler.Status
	if err := s.UnmarshalBinary(append(good, 0)); !errors.Is(err, reconciler.ErrStatusEncoding) {
		t.Errorf("trailing byte: %v", err)
	}
	for _, bad := range [][]byte{{9, 1, 0, 1, 0}, {1, 9, 0, 1, 0}, {1, 1, 0x80, 1, 0}} {
		if _, _, err := reconciler.DecodeStatus(bad); !errors.Is(err, reconciler.ErrStatusEncoding) {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

func sameStatus(a, b reconciler.Status) bool {
	return a.Kind == b.Kind && a.UpdatedAt.Equal(b.UpdatedAt) && a.GetError() == b.GetError() &&
		(a.Error == nil) == (b.Error == nil) && a.ID == b.ID && a.Attempts == b.Attempts && a.Terminal == b.Terminal
}

func TestStatusSet(t *testing.T) {
	// An empty set is Done and reads "Pending", as statedb's: no entry
	// is not Done, and a reconciler reading it (Get) finds Pending.
	var zero reconciler.StatusSet
	for _, empty := range []reconciler.StatusSet{zero, reconciler.NewStatusSet(), zero.Pending()} {
		if !empty.IsDone() || empty.IsPendingOrRefreshing() || empty.String() != "Pending" || empty.Len() != 0 {
			t.Errorf("empty set: IsDone %v, IsPendingOrRefreshing %v, String %q, Len %d; want true, false, Pending, 0",
				empty.IsDone(), empty.IsPendingOrRefreshing(), empty.String(), empty.Len())
		}
		if g := empty.Get("a"); g.Kind != reconciler.StatusKindPending {
			t.Errorf("empty set: Get = %+v, want Pending", g)
		}
	}
	// A set that names its reconcilers is not Done until each is: what
	// keeps an object from looking Done before every reconciler saw it
	// (cilium#48268).
	if named := reconciler.NewStatusSet("a").Set("b", reconciler.StatusDone()); named.IsDone() {
		t.Errorf("a set with a named reconciler pending is Done: %s", named)
	}
	s := reconciler.NewStatusSet("a", "b")
	if s.Len() != 2 || !s.IsPendingOrRefreshing() || s.IsDone() {
		t.Fatalf("new set: %s", s)
	}
	ida, idb := s.Get("a").ID, s.Get("b").ID
	if ida == 0 || ida != idb || s.Get("a").Kind != reconciler.StatusKindPending {
		t.Fatalf("pending IDs %d %d", ida, idb)
	}
	// Setting one reconciler's status leaves the other's, and the
	// original set, alone.
	s2 := s.Set("a", reconciler.StatusDone())
	if s.Get("a").Kind != reconciler.StatusKindPending {
		t.Error("Set changed the set it was called on")
	}
	if s2.IsDone() || s2.Get("b").ID != idb {
		t.Errorf("after a is Done: %s", s2)
	}
	s3 := s2.Set("b", reconciler.StatusDone())
	if !s3.IsDone() || s3.IsPendingOrRefreshing() {
		t.Errorf("all done: %s", s3)
	}
	// A required name without a status is not Done; an unknown name
	// reads as Pending with the set's ID.
	if g := s3.Get("c"); g.Kind != reconciler.StatusKindPending || g.ID != ida {
		t.Errorf("Get(unknown) = %+v", g)
	}
	s4 := s3.Pending("c")
	if s4.IsDone() || s4.Len() != 3 || s4.Get("a").Kind != reconciler.StatusKindPending || s4.Get("a").ID == ida {
		t.Errorf("Pending(c): %s", s4)
	}
	if !s3.IsDone() {
		t.Error("Pending changed the set it was called on")
	}
	s5 := s4.Delete("c").Set("a", reconciler.StatusDone()).Set("b", reconciler.StatusError(errors.New("x")))
	if s5.Len() != 2 || s5.IsDone() || !strings.Contains(s5.String(), "Errored: b (x)") {
		t.Errorf("after delete: %s", s5)
	}
	names := []string{}
	for name := range s5.All() {
		names = append(names, name)
	}
	if strings.Join(names, ",") != "a,b" {
		t.Errorf("All: %v", names)
	}
	j, err := json.Marshal(s5)
	if err != nil {
		t.Fatal(err)
	}
	var back reconciler.StatusSet
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if back.Len() != 2 || back.Get("a").Kind != reconciler.StatusKindDone || back.Get("b").GetError() != "x" {
		t.Errorf("JSON round trip: %s -> %s", j, back)
	}
}

// TestStatusSetYAML: a StatusSet encodes to YAML as a mapping of statuses
// by name (not the empty mapping of a struct without exported fields), and
// decodes back, inside an object as a table would hold it.
func TestStatusSetYAML(t *testing.T) {
	type obj struct {
		Name     string               `yaml:"name"`
		Statuses reconciler.StatusSet `yaml:"statuses"`
	}
	set := reconciler.NewStatusSet("a", "b").
		Set("a", reconciler.StatusDone()).
		Set("b", reconciler.StatusError(errors.New("no route")))
	out, err := yaml.Marshal(obj{Name: "x", Statuses: set})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"statuses:\n", "    a:\n", "kind: Done", "    b:\n", "kind: Error", "error: no route"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("YAML lacks %q:\n%s", want, out)
		}
	}
	var back obj
	if err := yaml.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back.Statuses.Len() != 2 || back.Statuses.Get("a").Kind != reconciler.StatusKindDone ||
		back.Statuses.Get("b").GetError() != "no route" || back.Statuses.Get("b").Kind != reconciler.StatusKindError {
		t.Errorf("YAML round trip: %s -> %s", out, back.Statuses)
	}
	if err := yaml.Unmarshal([]byte("statuses: [1, 2]\n"), &back); err == nil {
		t.Error("a sequence decoded as a StatusSet")
	}
}

// TestStatusTextAsMigratingSays: what MIGRATING.md says of a Status as
// text. String shows an Error's attempts (and terminal), ages as rounded
// Go durations, and "never" for no time; JSON and YAML have statedb's
// order (updated-at, error, id, kind, then attempts), and the older
// kind-first order decodes.
func TestStatusTextAsMigratingSays(t *testing.T) {
	msg := "boom"
	at := time.Now().Add(-90 * time.Second) // shown to the second: a slow machine does not change it
	for _, tc := range []struct {
		s    reconciler.Status
		want string
	}{
		{reconciler.Status{Kind: reconciler.StatusKindError, UpdatedAt: at, Error: &msg, Attempts: 3}, "Error: boom (3 attempts, 1m30s ago)"},
		{reconciler.Status{Kind: reconciler.StatusKindError, UpdatedAt: at, Error: &msg, Attempts: 1, Terminal: true}, "Error: boom (1 attempts, terminal, 1m30s ago)"},
		{reconciler.Status{Kind: reconciler.StatusKindDone, UpdatedAt: at}, "Done (1m30s ago)"},
		{reconciler.Status{Kind: reconciler.StatusKindPending}, "Pending (never ago)"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("String = %q, want %q", got, tc.want)
		}
	}
	s := reconciler.Status{Kind: reconciler.StatusKindError, UpdatedAt: time.Unix(1, 0).UTC(), Error: &msg, ID: 7, Attempts: 2}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"updated-at":"1970-01-01T00:00:01Z","error":"boom","id":7,"kind":"Error","attempts":2}`; string(js) != want {
		t.Errorf("JSON %s, want %s", js, want)
	}
	ys, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if want := "updated-at: 1970-01-01T00:00:01Z\nerror: boom\nid: 7\nkind: Error\nattempts: 2\n"; string(ys) != want {
		t.Errorf("YAML %q, want %q", ys, want)
	}
	var back reconciler.Status
	if err := yaml.Unmarshal([]byte("kind: Error\nupdated-at: 1970-01-01T00:00:01Z\nerror: boom\nid: 7\n"), &back); err != nil {
		t.Fatal(err)
	}
	if back.Kind != reconciler.StatusKindError || back.GetError() != "boom" || back.ID != 7 || !back.UpdatedAt.Equal(time.Unix(1, 0)) {
		t.Errorf("the kind-first order decoded as %+v", back)
	}
}
