package part

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"
)

// Named key types, to check that Map and Set key on the underlying kind.
type (
	testLabel string
	testPrio  int8
	testID    uint32
)

func eqInt(a, b int) bool { return a == b }

// checkMap compares every read of m against the model, for every key in the
// key space.
func checkMap[K MapKey](t *testing.T, m Map[K, int], model map[K]int, space []K) {
	t.Helper()
	if m.Len() != len(model) {
		t.Fatalf("Len() = %d, want %d", m.Len(), len(model))
	}
	for _, k := range space {
		v, found := m.Get(k)
		wv, wfound := model[k]
		if v != wv || found != wfound || m.Has(k) != wfound {
			t.Fatalf("Get(%v) = %d, %t; want %d, %t", k, v, found, wv, wfound)
		}
	}
	want := slices.Sorted(maps.Keys(model))
	var got []K
	for k, v := range m.All() {
		if v != model[k] {
			t.Fatalf("All() yields %v:%d, want %v:%d", k, v, k, model[k])
		}
		got = append(got, k)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("All() keys = %v, want %v", got, want)
	}
	if keys := slices.Collect(m.Keys()); !slices.Equal(keys, want) {
		t.Fatalf("Keys() = %v, want %v", keys, want)
	}
	for range m.All() {
		break // stopping early must not panic
	}
	if !maps.Equal(m.ToMap(), model) {
		t.Fatalf("ToMap() = %v, want %v", m.ToMap(), model)
	}
}

// checkLowerBound compares m.LowerBound(k) with the model's keys >= k.
func checkLowerBound[K MapKey](t *testing.T, m Map[K, int], model map[K]int, k K) {
	t.Helper()
	var want []K
	for _, mk := range slices.Sorted(maps.Keys(model)) {
		if mk >= k {
			want = append(want, mk)
		}
	}
	var got []K
	for gk, v := range m.LowerBound(k) {
		if v != model[gk] {
			t.Fatalf("LowerBound(%v) yields %v:%d, want %v:%d", k, gk, v, gk, model[gk])
		}
		got = append(got, gk)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("LowerBound(%v) = %v, want %v", k, got, want)
	}
}

// checkPrefix compares m.Prefix(p) with the model's keys whose encodings
// start with p's: for strings, the keys that start with p; for integers,
// p itself if present.
func checkPrefix[K MapKey](t *testing.T, m Map[K, int], model map[K]int, p K) {
	t.Helper()
	c := codecFor[K]()
	var pb, kb [8]byte
	var want []K
	for _, mk := range slices.Sorted(maps.Keys(model)) {
		if bytes.HasPrefix(encodeKey(c, mk, &kb), encodeKey(c, p, &pb)) {
			want = append(want, mk)
		}
	}
	if c&codecString == 0 && len(want) > 1 {
		t.Fatalf("%d integer keys have the prefix %v", len(want), p)
	}
	var got []K
	for gk, v := range m.Prefix(p) {
		if v != model[gk] {
			t.Fatalf("Prefix(%v) yields %v:%d, want %v:%d", p, gk, v, gk, model[gk])
		}
		got = append(got, gk)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Prefix(%v) = %v, want %v", p, got, want)
	}
	for range m.Prefix(p) {
		break // stopping early must not panic
	}
}

// testMapDifferential applies random operations to Maps and, alongside, to
// Go maps, and checks after each that the two agree. Each operation starts
// from a random earlier version, and every version is checked again at the
// end, so any change to a version after it was made is caught.
func testMapDifferential[K MapKey](t *testing.T, space []K) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	type version struct {
		m     Map[K, int]
		model map[K]int
	}
	versions := []version{{model: map[K]int{}}}
	pick := func() version {
		if r.IntN(4) > 0 {
			return versions[len(versions)-1]
		}
		return versions[r.IntN(len(versions))]
	}
	steps := 4000
	if raceDetector {
		steps /= 10 // one goroutine: see race_on_test.go
	}
	for range steps {
		a, b := pick(), versions[r.IntN(len(versions))]
		k := space[r.IntN(len(space))]
		next := version{model: maps.Clone(a.model)}
		switch op := r.IntN(12); {
		case op < 6:
			v := r.IntN(4)
			next.m, next.model[k] = a.m.Set(k, v), v
		case op < 9:
			next.m = a.m.Delete(k)
			delete(next.model, k)
		case op < 10:
			next.m = a.m.Union(b.m)
			maps.Copy(next.model, b.model)
		case op < 11:
			next.m = a.m.Difference(b.m)
			for bk := range b.model {
				delete(next.model, bk)
			}
		default:
			next.m = FromMap(a.model)
		}
		checkMap(t, next.m, next.model, space)
		checkLowerBound(t, next.m, next.model, space[r.IntN(len(space))])
		checkPrefix(t, next.m, next.model, space[r.IntN(len(space))])
		if got, want := next.m.Equal(a.m, eqInt), maps.Equal(next.model, a.model); got != want {
			t.Fatalf("Equal = %t, want %t", got, want)
		}
		sameKeys := len(next.model) == len(b.model)
		for nk := range next.model {
			_, found := b.model[nk]
			sameKeys = sameKeys && found
		}
		if got := next.m.EqualKeys(b.m); got != sameKeys {
			t.Fatalf("EqualKeys = %t, want %t", got, sameKeys)
		}
		if !next.m.Equal(FromMap(next.model), eqInt) {
			t.Fatalf("%v is not Equal to FromMap(%v)", next.m, next.model)
		}
		versions = append(versions, next)
	}
	for _, v := range versions {
		checkMap(t, v.m, v.model, space)
	}
}

func TestMapDifferential(t *testing.T) {
	t.Run("int", func(t *testing.T) {
		space := []int{math.MinInt, -256, -255, -2, -1, 0, 1, 2, 255, 256, math.MaxInt}
		for i := -8; i < 8; i++ {
			space = append(space, i*17)
		}
		testMapDifferential(t, space)
	})
	t.Run("string", func(t *testing.T) {
		space := []string{"", "\x00", "\x00\x00", "a", "a\x00", "ab", "abc", "abd", "b", "ba", "bab", "\xff", "\xff\xff", "zz"}
		testMapDifferential(t, space)
	})
}

func TestMapZero(t *testing.T) {
	var m Map[string, int]
	checkMap(t, m, map[string]int{}, []string{"", "a"})
	checkLowerBound(t, m, map[string]int{}, "")
	checkPrefix(t, m, map[string]int{}, "")
	checkMap(t, m.Delete("a"), map[string]int{}, []string{"a"})
	checkMap(t, m.Union(m), map[string]int{}, []string{"a"})
	checkMap(t, m.Difference(m), map[string]int{}, []string{"a"})
	if !m.Equal(Map[string, int]{}, eqInt) || !m.EqualKeys(FromMap(map[string]int{})) {
		t.Fatal("zero Maps are not Equal")
	}
	if s := m.String(); s != "map[]" {
		t.Fatalf("String() = %q", s)
	}
	m1 := m.Set("", 1)
	checkMap(t, m1, map[string]int{"": 1}, []string{"", "a"})
	m0 := m1.Delete("")
	checkMap(t, m0, map[string]int{}, []string{"", "a"})
	if !m0.Equal(m, eqInt) || !m.Equal(m0, eqInt) {
		t.Fatal("an emptied Map is not Equal to the zero Map")
	}
	checkMap(t, m0.Union(m1), map[string]int{"": 1}, []string{""})
	checkMap(t, m.Union(m1), map[string]int{"": 1}, []string{""})
}

func TestMapImmutable(t *testing.T) {
	var versions []Map[int, int]
	var contents []map[int]int
	var m Map[int, int]
	n := 2000
	if raceDetector {
		n /= 4 // one goroutine, and quadratic: see race_on_test.go
	}
	for i := range n {
		switch {
		case i%3 == 2:
			m = m.Delete(i / 2)
		case i%7 == 0:
			m = m.Union(FromMap(map[int]int{-i: i, i: -i}))
		case i%11 == 0:
			m = m.Difference(FromMap(map[int]int{i - 1: 0, i - 2: 0}))
		default:
			m = m.Set(i, i*i).Set(i/3, -i)
		}
		versions = append(versions, m)
		contents = append(contents, m.ToMap())
	}
	for i, v := range versions {
		if !maps.Equal(v.ToMap(), contents[i]) || v.Len() != len(contents[i]) {
			t.Fatalf("version %d changed after later operations", i)
		}
	}
}

// TestMapConcurrent derives versions from one shared Map in several
// goroutines at once; run with -race.
func TestMapConcurrent(t *testing.T) {
	shared := FromMap(map[int]int{1: 1, 2: 2, 3: 3})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			m := shared
			for i := range 500 {
				m = m.Set((g+1)*1000+i, i).Delete(1 + i%3).Union(shared)
				if v, found := shared.Get(2); !found || v != 2 || shared.Len() != 3 {
					t.Errorf("shared Map changed: %v", shared)
					return
				}
			}
			if m.Len() != 503 {
				t.Errorf("goroutine %d: Len() = %d, want 503", g, m.Len())
			}
		})
	}
	wg.Wait()
}

func TestMapUnionPrefersOther(t *testing.T) {
	small := FromMap(map[int]string{1: "m", 2: "m"})
	big := FromMap(map[int]string{2: "o", 3: "o", 4: "o"})
	if got := small.Union(big).String(); got != "map[1:m 2:o 3:o 4:o]" {
		t.Errorf("small.Union(big) = %s", got)
	}
	if got := big.Union(small).String(); got != "map[1:m 2:m 3:o 4:o]" {
		t.Errorf("big.Union(small) = %s", got)
	}
}

// testKeyOrder inserts the keys, given in ascending order, in reverse and
// checks that the Map iterates them in order and that their text form
// round-trips.
func testKeyOrder[K MapKey](t *testing.T, sorted ...K) {
	t.Helper()
	var m Map[K, int]
	for i, k := range slices.Backward(sorted) {
		m = m.Set(k, i)
	}
	if got := slices.Collect(m.Keys()); !slices.Equal(got, sorted) {
		t.Fatalf("keys iterate as %v, want %v", got, sorted)
	}
	c := codecFor[K]()
	for _, k := range sorted {
		s := formatKey(c, k)
		back, err := parseKey[K](c, s)
		if err != nil || back != k {
			t.Fatalf("parseKey(formatKey(%v) = %q) = %v, %v", k, s, back, err)
		}
	}
}

func TestMapKeyOrder(t *testing.T) {
	testKeyOrder(t, "", "\x00", "A", "a", "a\x00", "ab", "b", "é", "\xff")
	testKeyOrder(t, testLabel("app"), testLabel("apps"), testLabel("env"))
	testKeyOrder(t, math.MinInt, -1<<32, -256, -1, 0, 1, 255, 1<<40, math.MaxInt)
	testKeyOrder[int8](t, math.MinInt8, -127, -1, 0, 1, 126, math.MaxInt8)
	testKeyOrder[testPrio](t, math.MinInt8, -2, 0, 3, math.MaxInt8)
	testKeyOrder[int16](t, math.MinInt16, -256, -255, -1, 0, 1, 255, 256, math.MaxInt16)
	testKeyOrder[int32](t, math.MinInt32, -65536, -1, 0, 1, 65536, math.MaxInt32)
	testKeyOrder[int64](t, math.MinInt64, -1, 0, 1, math.MaxInt64)
	testKeyOrder[uint](t, 0, 1, 255, 256, math.MaxUint)
	testKeyOrder[uint8](t, 0, 1, 127, 128, math.MaxUint8)
	testKeyOrder[uint16](t, 0, 1, 255, 256, math.MaxUint16)
	testKeyOrder[uint32](t, 0, 1, 1<<31, math.MaxUint32)
	testKeyOrder[testID](t, 0, 7, 1<<31, math.MaxUint32)
	testKeyOrder[uint64](t, 0, 1, 1<<63, math.MaxUint64)
	testKeyOrder[uintptr](t, 0, 1, 1<<20, ^uintptr(0))
}

// labeled is a stored object with collections in it.
type labeled struct {
	Name   string
	Labels Map[string, string]
	Tags   Set[testLabel]
	Byte   Set[uint8]
	Levels Map[testPrio, Set[int]]
}

func (l labeled) equal(o labeled) bool {
	eqString := func(a, b string) bool { return a == b }
	eqSet := func(a, b Set[int]) bool { return a.Equal(b) }
	return l.Name == o.Name && l.Labels.Equal(o.Labels, eqString) && l.Tags.Equal(o.Tags) &&
		l.Byte.Equal(o.Byte) && l.Levels.Equal(o.Levels, eqSet)
}

func TestMapMarshalRoundTrip(t *testing.T) {
	full := labeled{
		Name: "obj",
		Labels: FromMap(map[string]string{
			"":                       "empty key",
			"quote\"":                "q",
			`back\slash`:             "b",
			"new\nline\ttab":         "n",
			"<html>&":                "h",
			"ünï/cödé":               "u",
			"app.kubernetes.io/name": "web",
			"yes":                    "no", // YAML 1.1 booleans must stay strings
			"1":                      "2",
		}),
		Tags:   NewSet[testLabel]("b", "a", "c", "a"),
		Byte:   NewSet[uint8](0, 1, 255),
		Levels: FromMap(map[testPrio]Set[int]{-128: NewSet(-1, 1), -1: {}, 0: NewSet(0), 127: NewSet(math.MinInt, math.MaxInt)}),
	}
	for name, obj := range map[string]labeled{"full": full, "empty": {}} {
		t.Run(name+"/json", func(t *testing.T) {
			data, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var back labeled
			if err := json.Unmarshal(data, &back); err != nil {
				t.Fatalf("%v in %s", err, data)
			}
			if !back.equal(obj) {
				t.Fatalf("round trip through %s gives %+v", data, back)
			}
		})
		t.Run(name+"/yaml", func(t *testing.T) {
			data, err := yaml.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var back labeled
			if err := yaml.Unmarshal(data, &back); err != nil {
				t.Fatalf("%v in\n%s", err, data)
			}
			if !back.equal(obj) {
				t.Fatalf("round trip through\n%s\ngives %+v", data, back)
			}
		})
	}
}

func TestMapMarshalJSONFormat(t *testing.T) {
	for _, tc := range []struct {
		in   json.Marshaler
		want string
	}{
		{Map[string, int]{}, `{}`},
		{Map[string, int]{}.Set("a", 1).Delete("a"), `{}`},
		{FromMap(map[string]int{"b": 2, "a": 1, "a\"": 3}), `{"a":1,"a\"":3,"b":2}`},
		{FromMap(map[int]string{10: "x", -2: "y", 3: "z", math.MinInt64: "min"}), `{"-9223372036854775808":"min","-2":"y","3":"z","10":"x"}`},
		{FromMap(map[testPrio]bool{-1: true, 1: false}), `{"-1":true,"1":false}`},
		{FromMap(map[uint64]int{math.MaxUint64: 1}), `{"18446744073709551615":1}`},
		{FromMap(map[testLabel][]int{"l": {1, 2}}), `{"l":[1,2]}`},
	} {
		data, err := tc.in.MarshalJSON()
		if err != nil || string(data) != tc.want {
			t.Errorf("MarshalJSON() = %s, %v; want %s", data, err, tc.want)
		}
	}
	// encoding/json reads the output as it reads its own maps.
	m := FromMap(map[int]string{-5: "a", 0: "b", 7: "c"})
	data, _ := json.Marshal(m)
	var plain map[int]string
	if err := json.Unmarshal(data, &plain); err != nil || !maps.Equal(plain, m.ToMap()) {
		t.Errorf("encoding/json reads %s as %v, %v", data, plain, err)
	}
}

func TestMapUnmarshalNull(t *testing.T) {
	m := FromMap(map[string]int{"a": 1})
	if err := json.Unmarshal([]byte(`null`), &m); err != nil || m.Len() != 1 {
		t.Fatalf("null: %v, %v", m, err)
	}
}

func TestMapUnmarshalErrors(t *testing.T) {
	orig := FromMap(map[int8]int{-1: 1, 2: 2})
	for _, tc := range []struct {
		in   string
		want error // nil: any error
	}{
		{`[1,2]`, nil},
		{`"x"`, nil},
		{`1`, nil},
		{`{"x":1}`, strconv.ErrSyntax},
		{`{"1.5":1}`, strconv.ErrSyntax},
		{`{"":1}`, strconv.ErrSyntax},
		{`{"128":1}`, strconv.ErrRange},
		{`{"-129":1}`, strconv.ErrRange},
		{`{"1":"one"}`, nil},
		{`{"1":1`, nil},
	} {
		m := orig
		err := json.Unmarshal([]byte(tc.in), &m)
		if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("json %s: error %v, want %v", tc.in, err, tc.want)
		}
		if !m.Equal(orig, eqInt) {
			t.Errorf("json %s: receiver changed to %v", tc.in, m)
		}
	}
	for _, in := range []string{"[1, 2]", "x", "x: 1", "128: 1", "-129: 1", "1: one", "{1: 1"} {
		m := orig
		if err := yaml.Unmarshal([]byte(in), &m); err == nil {
			t.Errorf("yaml %q: no error", in)
		}
		if !m.Equal(orig, eqInt) {
			t.Errorf("yaml %q: receiver changed to %v", in, m)
		}
	}
}

func TestMapYAMLFormat(t *testing.T) {
	obj := struct {
		Labels Map[string, string] `yaml:"labels"`
		Ports  Map[int, string]    `yaml:"ports"`
		Empty  Map[string, int]    `yaml:"empty"`
	}{
		Labels: FromMap(map[string]string{"b": "2", "a": "x y"}),
		Ports:  FromMap(map[int]string{443: "https", -1: "none", 80: "http"}),
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	const want = `labels:
    a: x y
    b: "2"
ports:
    -1: none
    80: http
    443: https
empty: {}
`
	if string(data) != want {
		t.Errorf("yaml.Marshal =\n%s\nwant\n%s", data, want)
	}
}

var benchKeys = []string{
	"app", "app.kubernetes.io/name", "app.kubernetes.io/version", "env", "region",
	"team", "tier", "topology.kubernetes.io/zone", "version", "zone",
}

func BenchmarkMap_Set(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		var m Map[string, string]
		for _, k := range benchKeys {
			m = m.Set(k, k)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(benchKeys)), "ns/key")
}

func BenchmarkMap_Get(b *testing.B) {
	var m Map[string, string]
	for _, k := range benchKeys {
		m = m.Set(k, k)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, k := range benchKeys {
			if _, found := m.Get(k); !found {
				b.Fatalf("%q not found", k)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(benchKeys)), "ns/key")
}
