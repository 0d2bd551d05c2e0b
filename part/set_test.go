package part

import (
	"encoding/json"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// checkSet compares every read of s against the model, for every element in
// the space.
func checkSet[T MapKey](t *testing.T, s Set[T], model map[T]bool, space []T) {
	t.Helper()
	if s.Len() != len(model) {
		t.Fatalf("Len() = %d, want %d", s.Len(), len(model))
	}
	for _, x := range space {
		if s.Has(x) != model[x] {
			t.Fatalf("Has(%v) = %t, want %t", x, s.Has(x), model[x])
		}
	}
	want := slices.Sorted(maps.Keys(model))
	if got := slices.Collect(s.All()); !slices.Equal(got, want) {
		t.Fatalf("All() = %v, want %v", got, want)
	}
	if got := s.ToSlice(); !slices.Equal(got, want) || got == nil {
		t.Fatalf("ToSlice() = %#v, want %v", got, want)
	}
	if first, ok := s.First(); ok != (len(want) > 0) || (ok && first != want[0]) {
		t.Fatalf("First() = %v, %t; want the smallest of %v", first, ok, want)
	}
	for range s.All() {
		break // stopping early must not panic
	}
}

// TestSetDifferential applies random operations to Sets and, alongside, to
// Go maps, and checks after each that the two agree. Each operation starts
// from a random earlier version, and every version is checked again at the
// end, so any change to a version after it was made is caught.
func TestSetDifferential(t *testing.T) {
	space := []int16{math.MinInt16, -257, -256, -255, -1, 0, 1, 255, 256, 257, math.MaxInt16}
	for i := int16(-6); i < 6; i++ {
		space = append(space, i*13)
	}
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	type version struct {
		s     Set[int16]
		model map[int16]bool
	}
	versions := []version{{model: map[int16]bool{}}}
	for range 4000 {
		a, b := versions[len(versions)-1], versions[r.IntN(len(versions))]
		if r.IntN(4) == 0 {
			a = versions[r.IntN(len(versions))]
		}
		x := space[r.IntN(len(space))]
		next := version{model: maps.Clone(a.model)}
		switch op := r.IntN(12); {
		case op < 5:
			next.s, next.model[x] = a.s.Add(x), true
		case op < 8:
			next.s = a.s.Delete(x)
			delete(next.model, x)
		case op < 9:
			next.s = a.s.Union(b.s)
			maps.Copy(next.model, b.model)
		case op < 10:
			next.s = a.s.Difference(b.s)
			for y := range b.model {
				delete(next.model, y)
			}
		case op < 11:
			next.s = a.s.Intersect(b.s)
			maps.DeleteFunc(next.model, func(y int16, _ bool) bool { return !b.model[y] })
		default:
			next.s = NewSet(slices.Collect(maps.Keys(a.model))...)
		}
		checkSet(t, next.s, next.model, space)
		for _, o := range []version{a, b} {
			if got, want := next.s.Equal(o.s), maps.Equal(next.model, o.model); got != want {
				t.Fatalf("%v.Equal(%v) = %t, want %t", next.s, o.s, got, want)
			}
		}
		if !next.s.Equal(NewSet(next.s.ToSlice()...)) {
			t.Fatalf("%v is not Equal to a copy", next.s)
		}
		versions = append(versions, next)
	}
	for _, v := range versions {
		checkSet(t, v.s, v.model, space)
	}
}

func TestSetZero(t *testing.T) {
	var s Set[string]
	none := map[string]bool{}
	checkSet(t, s, none, []string{"", "a"})
	checkSet(t, s.Delete("a"), none, []string{"a"})
	checkSet(t, s.Union(s), none, nil)
	checkSet(t, s.Difference(s), none, nil)
	checkSet(t, s.Intersect(s), none, nil)
	checkSet(t, NewSet[string](), none, nil)
	checkSet(t, NewSet("a", "b").Delete("a").Delete("b"), none, []string{"a"})
	if !s.Equal(NewSet[string]()) || !s.Equal(NewSet("a").Delete("a")) {
		t.Fatal("empty Sets are not Equal")
	}
	if got := s.String(); got != "set[]" {
		t.Fatalf("String() = %q", got)
	}
	one := s.Add("")
	checkSet(t, one, map[string]bool{"": true}, []string{"", "a"})
	checkSet(t, s.Union(one), map[string]bool{"": true}, nil)
	checkSet(t, one.Union(s), map[string]bool{"": true}, nil)
	checkSet(t, one.Intersect(s), none, []string{""})
	checkSet(t, s.Intersect(one), none, []string{""})
}

func TestSetImmutable(t *testing.T) {
	var versions []Set[int]
	var contents [][]int
	var s Set[int]
	n := 2000
	if raceDetector {
		n /= 4 // one goroutine, and quadratic: see race_on_test.go
	}
	for i := range n {
		switch {
		case i%3 == 2:
			s = s.Delete(i / 2)
		case i%7 == 0:
			s = s.Union(NewSet(-i, i, i+1))
		case i%11 == 0:
			s = s.Difference(NewSet(i-1, i-2))
		case i%13 == 0:
			s = s.Intersect(NewSet(slices.Collect(func(yield func(int) bool) {
				for j := range i {
					if j%5 != 0 && !yield(j) {
						return
					}
				}
			})...))
		default:
			s = s.Add(i).Add(-i / 3)
		}
		versions = append(versions, s)
		contents = append(contents, s.ToSlice())
	}
	for i, v := range versions {
		if !slices.Equal(v.ToSlice(), contents[i]) || v.Len() != len(contents[i]) {
			t.Fatalf("version %d changed after later operations", i)
		}
	}
}

func TestSetString(t *testing.T) {
	if got := NewSet[testLabel]("db", "api", "db").String(); got != "set[api db]" {
		t.Errorf("String() = %q", got)
	}
	if got := NewSet(3, -10, 0).String(); got != "set[-10 0 3]" {
		t.Errorf("String() = %q", got)
	}
}

func TestSetMarshal(t *testing.T) {
	for _, tc := range []struct {
		in        json.Marshaler
		json, yml string
	}{
		{Set[int]{}, `[]`, "[]\n"},
		{NewSet(1).Delete(1), `[]`, "[]\n"},
		{NewSet(3, -1, 2, -1), `[-1,2,3]`, "- -1\n- 2\n- 3\n"},
		{NewSet[uint8](255, 0, 1), `[0,1,255]`, "- 0\n- 1\n- 255\n"},
		{NewSet("b", "a\"", "<&>", "yes"), `["\u003c\u0026\u003e","a\"","b","yes"]`, "- <&>\n- a\"\n- b\n- \"yes\"\n"},
	} {
		data, err := json.Marshal(tc.in)
		if err != nil || string(data) != tc.json {
			t.Errorf("json.Marshal = %s, %v; want %s", data, err, tc.json)
		}
		data, err = yaml.Marshal(tc.in)
		if err != nil || string(data) != tc.yml {
			t.Errorf("yaml.Marshal = %q, %v; want %q", data, err, tc.yml)
		}
	}
	var s Set[int8]
	if err := json.Unmarshal([]byte(`[3,1,3,-128,2]`), &s); err != nil || s.String() != "set[-128 1 2 3]" {
		t.Errorf("json duplicates: %v, %v", s, err)
	}
	if err := json.Unmarshal([]byte(`null`), &s); err != nil || s.Len() != 4 {
		t.Errorf("json null: %v, %v", s, err)
	}
	s = Set[int8]{}
	if err := yaml.Unmarshal([]byte("[3, 1, 3, -128, 2]"), &s); err != nil || s.String() != "set[-128 1 2 3]" {
		t.Errorf("yaml duplicates: %v, %v", s, err)
	}
}

func TestSetUnmarshalErrors(t *testing.T) {
	orig := NewSet[int8](-1, 5)
	for _, in := range []string{`{"a":1}`, `"x"`, `1`, `[1,"x"]`, `[1,128]`, `[-129]`, `[1.5]`, `[1,`} {
		s := orig
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("json %s: no error", in)
		}
		if !s.Equal(orig) {
			t.Errorf("json %s: receiver changed to %v", in, s)
		}
	}
	for _, in := range []string{"a: 1", "x", "[1, x]", "[1, 128]", "[-129]", "[1,"} {
		s := orig
		if err := yaml.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("yaml %q: no error", in)
		}
		if !s.Equal(orig) {
			t.Errorf("yaml %q: receiver changed to %v", in, s)
		}
	}
}

func BenchmarkSet_Has(b *testing.B) {
	var s Set[string]
	for _, k := range benchKeys {
		s = s.Add(k)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range benchKeys {
			if !s.Has(k) {
				b.Fatalf("%q not found", k)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(benchKeys)), "ns/key")
}

func TestSetFirstAllocs(t *testing.T) {
	s := NewSet[uint16](300, 7, 4000)
	if n := testing.AllocsPerRun(100, func() {
		if x, ok := s.First(); !ok || x != 7 {
			t.Fatalf("First() = %d, %v; want 7", x, ok)
		}
	}); n != 0 {
		t.Fatalf("First: %v allocations, want 0", n)
	}
}
