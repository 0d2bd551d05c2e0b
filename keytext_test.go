package strata

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata/index"
)

// textIndex returns an index of Key with the given FromKey, its FromString
// and ToString left to the defaults.
func textIndex[Key any](fromKey func(Key) index.Key) Index[*testObject, Key] {
	return Index[*testObject, Key]{Name: "k", FromKey: fromKey}
}

// textCase checks the default text of one Key type: the values render as
// want, every rendering parses back to its key, and random values round
// trip.
type textCase struct {
	name  string
	check func(t *testing.T)
}

func defaultTextCase[Key any](name string, fromKey func(Key) index.Key, want map[string]Key, gen func(*rand.Rand) Key) textCase {
	return textCase{name, func(t *testing.T) {
		ix := textIndex(fromKey)
		for text, v := range want {
			k := fromKey(v)
			if got := ix.keyString(k); got != text {
				t.Errorf("keyString(FromKey(%v)) = %q, want %q", v, got, text)
			}
			if got, err := ix.fromString(text); err != nil || !got.Equal(k) {
				t.Errorf("fromString(%q) = %v, %v; want %v", text, got, err, k)
			}
		}
		r := rand.New(rand.NewPCG(1, uint64(len(name))))
		for range 2000 {
			v := gen(r)
			k := fromKey(v)
			text := ix.keyString(k)
			if got, err := ix.fromString(text); err != nil || !got.Equal(k) {
				t.Fatalf("key %v of %v renders as %q, which parses to %v, %v", k, v, text, got, err)
			}
		}
	}}
}

func randOf[T any](r *rand.Rand) T {
	var v T
	switch p := any(&v).(type) {
	case *int8:
		*p = int8(r.Uint32())
	case *int16:
		*p = int16(r.Uint32())
	case *int32:
		*p = int32(r.Uint32())
	case *int64:
		*p = int64(r.Uint64())
	case *int:
		*p = int(r.Uint64())
	case *uint8:
		*p = uint8(r.Uint32())
	case *uint16:
		*p = uint16(r.Uint32())
	case *uint32:
		*p = r.Uint32()
	case *uint64:
		*p = r.Uint64()
	case *uint:
		*p = uint(r.Uint64())
	case *float32:
		*p = math.Float32frombits(r.Uint32())
	case *float64:
		*p = math.Float64frombits(r.Uint64())
	case *bool:
		*p = r.IntN(2) == 0
	case *string:
		b := make([]byte, r.IntN(8))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		*p = string(b)
	default:
		panic(fmt.Sprintf("randOf %T", v))
	}
	return v
}

type (
	textName string
	textID   uint32
	// textProto parses itself from text but cannot render itself: its
	// keys parse by default and render as index.Key does.
	textProto uint8
)

func (p *textProto) UnmarshalText(b []byte) error {
	switch string(b) {
	case "tcp":
		*p = 6
	case "udp":
		*p = 17
	default:
		return fmt.Errorf("unknown protocol %q", b)
	}
	return nil
}

// TestIndexDefaultText: an index whose Key is a type with a text form
// parses and renders keys without FromString or ToString.
func TestIndexDefaultText(t *testing.T) {
	p := netip.MustParsePrefix
	a := netip.MustParseAddr
	day := time.Date(2025, 6, 1, 12, 0, 0, 5, time.UTC)
	for _, c := range []textCase{
		defaultTextCase("uint8", index.Uint8, map[string]uint8{"0": 0, "255": 255}, randOf[uint8]),
		defaultTextCase("uint16", index.Uint16, map[string]uint16{"65535": 65535}, randOf[uint16]),
		defaultTextCase("uint32", index.Uint32, map[string]uint32{"7": 7}, randOf[uint32]),
		defaultTextCase("uint64", index.Uint64, map[string]uint64{"18446744073709551615": math.MaxUint64}, randOf[uint64]),
		defaultTextCase("uint", index.Uint, map[string]uint{"1": 1}, randOf[uint]),
		defaultTextCase("int8", index.Int8, map[string]int8{"-128": -128, "0": 0}, randOf[int8]),
		defaultTextCase("int16", index.Int16, map[string]int16{"-1": -1}, randOf[int16]),
		defaultTextCase("int32", index.Int32, map[string]int32{"100000": 100000}, randOf[int32]),
		defaultTextCase("int64", index.Int64, map[string]int64{"-9223372036854775808": math.MinInt64}, randOf[int64]),
		defaultTextCase("int", index.Int, map[string]int{"-3": -3, "42": 42}, randOf[int]),
		defaultTextCase("float64", index.Float64, map[string]float64{"1.5": 1.5, "-Inf": math.Inf(-1), "NaN": math.NaN()}, randOf[float64]),
		defaultTextCase("float32", func(f float32) index.Key { return index.Float64(float64(f)) }, map[string]float32{"0.1": 0.1}, randOf[float32]),
		defaultTextCase("bool", index.Bool, map[string]bool{"true": true, "false": false}, randOf[bool]),
		defaultTextCase("string", index.String, map[string]string{"eu-west": "eu-west", "": "", "a\x00b": "a\x00b"}, randOf[string]),
		defaultTextCase("[]byte", index.Bytes, map[string][]byte{"0x00ff": {0, 0xff}}, func(r *rand.Rand) []byte { return []byte(randOf[string](r)) }),
		defaultTextCase("index.Key", func(k index.Key) index.Key { return k }, map[string]index.Key{"0x6869": index.Key("hi")}, func(r *rand.Rand) index.Key { return index.Key(randOf[string](r)) }),
		defaultTextCase("named string", func(n textName) index.Key { return index.String(string(n)) }, map[string]textName{"x": "x"}, func(r *rand.Rand) textName { return textName(randOf[string](r)) }),
		defaultTextCase("named uint32", func(n textID) index.Key { return index.Uint32(uint32(n)) }, map[string]textID{"9": 9}, func(r *rand.Rand) textID { return textID(randOf[uint32](r)) }),
		defaultTextCase("time.Time", index.Time, map[string]time.Time{"2025-06-01T12:00:00.000000005Z": day},
			func(r *rand.Rand) time.Time { return time.Unix(r.Int64N(1e10), r.Int64N(1e9)) }),
		defaultTextCase("netip.Addr", index.NetIPAddr, map[string]netip.Addr{"10.0.0.1": a("10.0.0.1"), "fe80::1%eth0": a("fe80::1%eth0"), "": {}},
			func(r *rand.Rand) netip.Addr {
				return netip.AddrFrom4([4]byte{byte(r.Uint32()), 0, byte(r.Uint32()), 1})
			}),
		defaultTextCase("netip.Prefix", index.NetIPPrefix, map[string]netip.Prefix{"10.1.2.3/8": p("10.1.2.3/8"), "2001:db8::/32": p("2001:db8::/32")},
			func(r *rand.Rand) netip.Prefix {
				return netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(r.Uint32()), 0, 0, 1}), r.IntN(33))
			}),
		// Ported from statedb, where integers were encoded unsigned: the
		// key is still shown as the value it holds.
		defaultTextCase("int64 as Uint64", func(v int64) index.Key { return index.Uint64(uint64(v)) }, map[string]int64{"-1": -1, "5": 5}, randOf[int64]),
		defaultTextCase("int as Int32", func(v int) index.Key { return index.Int32(int32(v)) }, map[string]int{"-7": -7}, func(r *rand.Rand) int { return int(randOf[int32](r)) }),
		defaultTextCase("uint16 as Int16", func(v uint16) index.Key { return index.Int16(int16(v)) }, map[string]uint16{"65535": 65535}, randOf[uint16]),
	} {
		t.Run(c.name, c.check)
	}
	// Any offset parses; the key is the instant's.
	if k, err := textIndex(index.Time).fromString("2025-06-01T14:00:00.000000005+02:00"); err != nil || !k.Equal(index.Time(day)) {
		t.Errorf("fromString of a time with an offset = %v, %v; want %v", k, err, index.Time(day))
	}
}

// TestIndexDefaultTextNeverLies: where the key is not what FromKey makes
// of a decodable value's text, the key is shown as index.Key shows it.
func TestIndexDefaultTextNeverLies(t *testing.T) {
	doubled := textIndex(func(v int64) index.Key { return index.Int64(2 * v) })
	escaped := textIndex(func(s string) index.Key { return index.Composite(index.String(s)) })
	lower := textIndex(func(s string) index.Key { return index.String(strings.ToLower(s)) })
	type pair struct{ A, B string }
	composite := textIndex(func(p pair) index.Key { return index.Composite(index.String(p.A), index.String(p.B)) })
	var proto Index[*testObject, textProto]
	proto.FromKey = func(p textProto) index.Key { return index.Uint8(uint8(p)) }
	for _, c := range []struct {
		got  string
		want index.Key
	}{
		{doubled.keyString(index.Int64(6)), index.Int64(6)},
		{escaped.keyString(index.Composite(index.String("ab"))), index.Composite(index.String("ab"))},
		{composite.keyString(index.Composite(index.String("a"), index.String("b"))), index.Composite(index.String("a"), index.String("b"))},
		{proto.keyString(index.Uint8(6)), index.Uint8(6)},
		{textIndex(index.Uint64).keyString(index.Key("abc")), index.Key("abc")},
		{textIndex(index.NetIPAddr).keyString(index.Key{9}), index.Key{9}},
		{textIndex(index.Time).keyString(index.Time(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))), index.Time(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))},
	} {
		if c.got != c.want.String() {
			t.Errorf("shown as %q, want index.Key's %q", c.got, c.want.String())
		}
	}
	// Lower-casing maps many texts to one key; the text shown is one that
	// gives the key.
	if got := lower.keyString(index.String("abc")); got != "abc" {
		t.Errorf("lower-cased key shown as %q, want abc", got)
	}
	// The parser needs no rendering: textProto parses by its UnmarshalText.
	if k, err := proto.fromString("udp"); err != nil || !k.Equal(index.Uint8(17)) {
		t.Errorf("fromString(udp) = %v, %v", k, err)
	}
	if _, err := proto.fromString("icmp"); !errors.Is(err, index.ErrParseKey) {
		t.Errorf("fromString(icmp): %v, want ErrParseKey", err)
	}
	if _, err := composite.fromString("a"); !errors.Is(err, ErrNoFromString) {
		t.Errorf("composite fromString: %v, want ErrNoFromString", err)
	}
	if _, err := (Index[*testObject, uint64]{}).fromString("1"); !errors.Is(err, ErrNoFromString) {
		t.Errorf("fromString without FromKey: %v, want ErrNoFromString", err)
	}
	if got := (Index[*testObject, uint64]{}).keyString(index.Uint64(1)); got != index.Uint64(1).String() {
		t.Errorf("keyString without FromKey = %q", got)
	}
}

func TestIndexDefaultTextParseErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"uint8 256", errOf(textIndex(index.Uint8).fromString("256"))},
		{"int x", errOf(textIndex(index.Int).fromString("x"))},
		{"bool", errOf(textIndex(index.Bool).fromString("maybe"))},
		{"float", errOf(textIndex(index.Float64).fromString("1,5"))},
		{"bytes", errOf(textIndex(index.Bytes).fromString("0xabc"))},
		{"time", errOf(textIndex(index.Time).fromString("2025-06-01"))},
		{"addr", errOf(textIndex(index.NetIPAddr).fromString("10.0.0.0/8"))},
		{"prefix", errOf(textIndex(index.NetIPPrefix).fromString("10.0.0.0/40"))},
	} {
		if !errors.Is(c.err, index.ErrParseKey) {
			t.Errorf("%s: %v, want ErrParseKey", c.name, c.err)
		}
	}
}

func errOf(_ index.Key, err error) error { return err }

// TestIndexExplicitText: FromString and ToString, when set, are used; a
// ToString that fails falls back to index.Key's String.
func TestIndexExplicitText(t *testing.T) {
	type region struct {
		Name string
		N    int64
	}
	ix := Index[*testObject, region]{
		Name:       "region",
		FromKey:    func(r region) index.Key { return index.Composite(index.String(r.Name), index.Int64(r.N)) },
		FromString: index.CompositeParser("/", index.FromString, index.Int64String),
		ToString:   index.CompositeFormatter("/", index.FormatString, index.FormatInt64),
	}
	k := ix.FromKey(region{"eu", -2})
	if got := ix.keyString(k); got != "eu/-2" {
		t.Errorf("keyString = %q, want eu/-2", got)
	}
	if got, err := ix.fromString("eu/-2"); err != nil || !got.Equal(k) {
		t.Errorf("fromString(eu/-2) = %v, %v; want %v", got, err, k)
	}
	bad := index.Key("\x01")
	if got := ix.keyString(bad); got != bad.String() {
		t.Errorf("keyString of a malformed key = %q, want %q", got, bad.String())
	}
	// A table's index definitions carry both.
	db := New()
	tbl := newTestTable(t, db, "text", nameIndex, valueIndex).(*table[*testObject])
	for _, c := range []struct {
		index, text string
		key         index.Key
	}{{"id", "7", index.Uint64(7)}, {"name", "x", index.String("x")}, {"value", "-1", index.Int(-1)}} {
		def := tbl.index(c.index)
		if got := def.keyString(c.key); got != c.text {
			t.Errorf("index %s: keyString = %q, want %q", c.index, got, c.text)
		}
		if got, err := def.fromString(c.text); err != nil || !got.Equal(c.key) {
			t.Errorf("index %s: fromString(%q) = %v, %v", c.index, c.text, got, err)
		}
	}
}
