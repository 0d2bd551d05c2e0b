package index

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// textCodec is one encoder with its decoder, parser and formatter, for
// the round-trip tests.
type textCodec struct {
	name   string
	parse  func(string) (Key, error)
	format func(Key) (string, error)
	// reencode decodes a key and encodes the value again.
	reencode func(Key) (Key, error)
	// key returns a random key of the encoder.
	key func(*rand.Rand) Key
}

func codecOf[T any](name string, enc func(T) Key, dec func(Key) (T, error), parse func(string) (Key, error), format func(Key) (string, error), gen func(*rand.Rand) T) textCodec {
	return textCodec{
		name:   name,
		parse:  parse,
		format: format,
		reencode: func(k Key) (Key, error) {
			v, err := dec(k)
			if err != nil {
				return nil, err
			}
			return enc(v), nil
		},
		key: func(r *rand.Rand) Key { return enc(gen(r)) },
	}
}

func randFloat(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), math.SmallestNonzeroFloat64, math.MaxFloat64}[r.IntN(7)]
	case 1:
		return float64(r.IntN(9) - 4)
	}
	return math.Float64frombits(r.Uint64())
}

func randTime(r *rand.Rand) time.Time {
	switch r.IntN(4) {
	case 0:
		return time.Unix(int64(r.Uint64()), int64(r.IntN(1e9))) // anywhere
	case 1:
		return time.Time{}
	}
	return time.Unix(r.Int64N(400*365*86400)-200*365*86400, int64(r.IntN(1e9))).In(testZones[r.IntN(len(testZones))])
}

var textCodecs = []textCodec{
	codecOf("Uint8", Uint8, DecodeUint8, Uint8String, FormatUint8, randInt[uint8]),
	codecOf("Uint16", Uint16, DecodeUint16, Uint16String, FormatUint16, randInt[uint16]),
	codecOf("Uint32", Uint32, DecodeUint32, Uint32String, FormatUint32, randInt[uint32]),
	codecOf("Uint64", Uint64, DecodeUint64, Uint64String, FormatUint64, randInt[uint64]),
	codecOf("Uint", Uint, DecodeUint, UintString, FormatUint, randInt[uint]),
	codecOf("Int8", Int8, DecodeInt8, Int8String, FormatInt8, randInt[int8]),
	codecOf("Int16", Int16, DecodeInt16, Int16String, FormatInt16, randInt[int16]),
	codecOf("Int32", Int32, DecodeInt32, Int32String, FormatInt32, randInt[int32]),
	codecOf("Int64", Int64, DecodeInt64, Int64String, FormatInt64, randInt[int64]),
	codecOf("Int", Int, DecodeInt, IntString, FormatInt, randInt[int]),
	codecOf("Float64", Float64, DecodeFloat64, Float64String, FormatFloat64, randFloat),
	codecOf("Bool", Bool, DecodeBool, BoolString, FormatBool, func(r *rand.Rand) bool { return r.IntN(2) == 0 }),
	codecOf("String", String, DecodeString, FromString, FormatString, func(r *rand.Rand) string { return string(randBytes(r, 6)) }),
	codecOf("Bytes", Bytes, DecodeBytes, BytesString, FormatBytes, func(r *rand.Rand) []byte { return randBytes(r, 6) }),
	codecOf("Time", Time, DecodeTime, TimeString, FormatTime, randTime),
	codecOf("NetIPAddr", NetIPAddr, DecodeNetIPAddr, NetIPAddrString, FormatNetIPAddr, func(r *rand.Rand) netip.Addr { return randAddr(r, true) }),
	codecOf("NetIPPrefix", NetIPPrefix, DecodeNetIPPrefix, NetIPPrefixString, FormatNetIPPrefix, randPrefix),
}

// TestDecodeFormatParseRoundTrip checks, on random keys of every encoder,
// that decoding and encoding again gives the key back, and that the
// formatter's text parses back to the key; the formatter may refuse only
// with ErrNoTextForm.
func TestDecodeFormatParseRoundTrip(t *testing.T) {
	for _, c := range textCodecs {
		t.Run(c.name, func(t *testing.T) {
			r := newRand(t)
			formatted := 0
			for range randPairs {
				k := c.key(r)
				again, err := c.reencode(k)
				if err != nil || !again.Equal(k) {
					t.Fatalf("decode and encode %x: %x, %v", []byte(k), []byte(again), err)
				}
				text, err := c.format(k)
				if err != nil {
					if !errors.Is(err, ErrNoTextForm) {
						t.Fatalf("format %x: %v, want ErrNoTextForm or success", []byte(k), err)
					}
					continue
				}
				formatted++
				parsed, err := c.parse(text)
				if err != nil || !parsed.Equal(k) {
					t.Fatalf("format %x = %q, which parses to %x, %v", []byte(k), text, []byte(parsed), err)
				}
			}
			if formatted < randPairs/2 {
				t.Fatalf("only %d of %d keys formatted", formatted, randPairs)
			}
		})
	}
}

func TestParse(t *testing.T) {
	a := netip.MustParseAddr
	p := netip.MustParsePrefix
	for _, c := range []struct {
		parse func(string) (Key, error)
		text  string
		want  Key
	}{
		{Uint8String, "255", Uint8(255)},
		{Uint16String, "0", Uint16(0)},
		{Uint32String, "4294967295", Uint32(math.MaxUint32)},
		{Uint64String, "18446744073709551615", Uint64(math.MaxUint64)},
		{UintString, "7", Uint(7)},
		{Int8String, "-128", Int8(-128)},
		{Int16String, "+12", Int16(12)},
		{Int32String, "-2147483648", Int32(math.MinInt32)},
		{Int64String, "-1", Int64(-1)},
		{IntString, "42", Int(42)},
		{Float64String, "1.5", Float64(1.5)},
		{Float64String, "-0", Float64(0)},
		{Float64String, "NaN", Float64(math.NaN())},
		{Float64String, "-Inf", Float64(math.Inf(-1))},
		{BoolString, "true", Bool(true)},
		{BoolString, "0", Bool(false)},
		{FromString, "a/b c", String("a/b c")},
		{FromString, "", String("")},
		{BytesString, "0x00ff", Bytes([]byte{0, 0xff})},
		{BytesString, "00FF", Bytes([]byte{0, 0xff})},
		{BytesString, "", Bytes(nil)},
		{TimeString, "2025-06-01T12:00:00Z", Time(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))},
		{TimeString, "2025-06-01T14:00:00.5+02:00", Time(time.Date(2025, 6, 1, 12, 0, 0, 5e8, time.UTC))},
		{NetIPAddrString, "10.0.0.1", NetIPAddr(a("10.0.0.1"))},
		{NetIPAddrString, "fe80::1%eth0", NetIPAddr(a("fe80::1%eth0"))},
		{NetIPAddrString, "", NetIPAddr(netip.Addr{})},
		{NetIPPrefixString, "10.1.2.3/8", NetIPPrefix(p("10.1.2.3/8"))},
		{NetIPPrefixString, "2001:db8::/32", NetIPPrefix(p("2001:db8::/32"))},
		{NetIPPrefixString, "", NetIPPrefix(netip.Prefix{})},
	} {
		got, err := c.parse(c.text)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("parse %q = %x, %v; want %x", c.text, []byte(got), err, []byte(c.want))
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct {
		parse func(string) (Key, error)
		text  string
	}{
		{Uint8String, "256"}, {Uint8String, "-1"}, {Uint16String, "65536"}, {Uint32String, "x"},
		{Uint64String, ""}, {UintString, "1.0"}, {Int8String, "128"}, {Int16String, "-32769"},
		{Int32String, "2147483648"}, {Int64String, "9223372036854775808"}, {IntString, "0x10"},
		{Float64String, "one"}, {BoolString, "yes"}, {BytesString, "0x0"}, {BytesString, "zz"},
		{TimeString, "2025-06-01"}, {TimeString, "yesterday"}, {NetIPAddrString, "10.0.0.256"},
		{NetIPAddrString, "10.0.0.0/8"}, {NetIPPrefixString, "10.0.0.0/33"}, {NetIPPrefixString, "10.0.0.1"},
	} {
		k, err := c.parse(c.text)
		if !errors.Is(err, ErrParseKey) {
			t.Errorf("parse %q = %x, %v; want ErrParseKey", c.text, []byte(k), err)
		}
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		format func(Key) (string, error)
		key    Key
		want   string
	}{
		{FormatInt64, Int64(-5), "-5"},
		{FormatUint16, Uint16(65535), "65535"},
		{FormatFloat64, Float64(0.1), "0.1"},
		{FormatFloat64, Float64(math.Copysign(0, -1)), "0"},
		{FormatFloat64, Float64(math.Inf(1)), "+Inf"},
		{FormatBool, Bool(false), "false"},
		{FormatBytes, Bytes([]byte{0xab, 1}), "0xab01"},
		{FormatTime, Time(time.Date(2025, 6, 1, 14, 0, 0, 1, time.FixedZone("x", 7200))), "2025-06-01T12:00:00.000000001Z"},
		{FormatNetIPAddr, NetIPAddr(netip.MustParseAddr("::ffff:10.0.0.1")), "::ffff:10.0.0.1"},
		{FormatNetIPPrefix, NetIPPrefix(netip.MustParsePrefix("10.1.2.3/8")), "10.1.2.3/8"},
		{FormatNetIPPrefix, NetIPPrefix(netip.Prefix{}), ""},
	} {
		got, err := c.format(c.key)
		if err != nil || got != c.want {
			t.Errorf("format %x = %q, %v; want %q", []byte(c.key), got, err, c.want)
		}
	}
	for _, k := range []Key{
		Time(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)),
		NetIPPrefix(netip.PrefixFrom(netip.MustParseAddr("1.2.3.4"), 33)),
	} {
		if s, err := FormatTime(k); len(k) == timeKeyLen && !errors.Is(err, ErrNoTextForm) {
			t.Errorf("FormatTime(%x) = %q, %v; want ErrNoTextForm", []byte(k), s, err)
		}
		if s, err := FormatNetIPPrefix(k); len(k) != timeKeyLen && !errors.Is(err, ErrNoTextForm) {
			t.Errorf("FormatNetIPPrefix(%x) = %q, %v; want ErrNoTextForm", []byte(k), s, err)
		}
	}
}

// TestDecodeMalformed: keys no encoder makes are refused with
// ErrMalformedKey, by the decoder and by the formatter.
func TestDecodeMalformed(t *testing.T) {
	v4 := NetIPAddr(netip.MustParseAddr("10.0.0.1"))
	pfx := NetIPPrefix(netip.MustParsePrefix("10.0.0.0/8"))
	for _, c := range []struct {
		name string
		dec  func(Key) (string, error)
		key  Key
	}{
		{"Uint8", FormatUint8, Key{}},
		{"Uint16", FormatUint16, Key{1}},
		{"Uint32", FormatUint32, Key{1, 2, 3, 4, 5}},
		{"Uint64", FormatUint64, Key{1, 2, 3, 4, 5, 6, 7}},
		{"Int8", FormatInt8, Key{1, 2}},
		{"Int", FormatInt, nil},
		{"Float64 short", FormatFloat64, Key{0}},
		{"Float64 -0", FormatFloat64, Key{0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"Float64 other NaN", FormatFloat64, Key{0, 0, 0, 0, 0, 0, 0, 1}},
		{"Bool 2", FormatBool, Key{2}},
		{"Bool long", FormatBool, Key{1, 0}},
		{"Time nanoseconds", FormatTime, append(Time(time.Unix(0, 0))[:8:8], 0x3b, 0x9a, 0xca, 0x00)},
		{"Time short", FormatTime, Time(time.Unix(0, 0))[:11]},
		{"NetIPAddr empty", FormatNetIPAddr, Key{}},
		{"NetIPAddr tag", FormatNetIPAddr, Key{5, 1, 2, 3, 4}},
		{"NetIPAddr short v4", FormatNetIPAddr, v4[:4]},
		{"NetIPAddr long v4", FormatNetIPAddr, append(v4[:5:5], 0)},
		{"NetIPAddr invalid+", FormatNetIPAddr, Key{0, 0}},
		{"NetIPAddr short v6", FormatNetIPAddr, NetIPAddr(netip.IPv6Loopback())[:16]},
		{"NetIPPrefix no length", FormatNetIPPrefix, v4},
		{"NetIPPrefix no addr", FormatNetIPPrefix, pfx[:6]},
		{"NetIPPrefix unmasked", FormatNetIPPrefix, append(v4[:5:5], 9, 4, 10, 0, 0, 1)},
		{"NetIPPrefix length", FormatNetIPPrefix, append(pfx[:5:5], 40, 4, 10, 0, 0, 0)},
		{"NetIPPrefix families", FormatNetIPPrefix, append(pfx[:6:6], NetIPAddr(netip.IPv6Loopback())...)},
	} {
		if s, err := c.dec(c.key); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("%s: format %x = %q, %v; want ErrMalformedKey", c.name, []byte(c.key), s, err)
		}
	}
}

func TestCompositeText(t *testing.T) {
	parse := CompositeParser("/", FromString, Int64String, NetIPPrefixString)
	format := CompositeFormatter("/", FormatString, FormatInt64, FormatNetIPPrefix)
	pfx := netip.MustParsePrefix("10.0.0.0/8")
	for _, c := range []struct {
		text string
		key  Key
	}{
		{"eu-west/-7/10.0.0.0/8", Composite(String("eu-west"), Int64(-7), NetIPPrefix(pfx))},
		{"eu-west/3", CompositePrefix(String("eu-west"), Int64(3))},
		{"eu-west", CompositePrefix(String("eu-west"))},
		{"", CompositePrefix(String(""))},
		{"/0/", Composite(String(""), Int64(0), NetIPPrefix(netip.Prefix{}))},
	} {
		got, err := parse(c.text)
		if err != nil || !got.Equal(c.key) {
			t.Errorf("parse %q = %x, %v; want %x", c.text, []byte(got), err, []byte(c.key))
		}
		text, err := format(c.key)
		if err != nil || text != c.text {
			t.Errorf("format %x = %q, %v; want %q", []byte(c.key), text, err, c.text)
		}
	}
	// The last part may hold the separator: it gets the rest of the text.
	last := CompositeParser("/", FromString, FromString)
	if k, err := last("a/b/c"); err != nil || !k.Equal(Composite(String("a"), String("b/c"))) {
		t.Errorf("parse a/b/c = %x, %v", []byte(k), err)
	}
	if s, err := CompositeFormatter("/", FormatString, FormatString)(Composite(String("a"), String("b/c"))); err != nil || s != "a/b/c" {
		t.Errorf("format (a, b/c) = %q, %v", s, err)
	}
	for _, c := range []struct {
		text string
		part int
	}{{"eu/x", 1}, {"eu/1/10.0.0.0", 2}, {"eu//", 1}} {
		k, err := parse(c.text)
		if !errors.Is(err, ErrParseKey) || !strings.Contains(err.Error(), fmt.Sprintf("part %d", c.part)) {
			t.Errorf("parse %q = %x, %v; want ErrParseKey in part %d", c.text, []byte(k), err, c.part)
		}
	}
	// A user's parser whose error does not wrap ErrParseKey gets it.
	mine := errors.New("mine")
	custom := CompositeParser(",", func(string) (Key, error) { return nil, mine })
	if _, err := custom("x"); !errors.Is(err, ErrParseKey) || !errors.Is(err, mine) {
		t.Errorf("custom part error: %v, want ErrParseKey and the part's error", err)
	}
	for _, c := range []struct {
		key  Key
		want error
	}{
		{Composite(String("a/b"), Int64(1)), ErrNoTextForm},
		{Composite(), ErrNoTextForm},
		{Key("x"), ErrMalformedKey},
		{Composite(String("a"), Int64(1), NetIPPrefix(pfx), String("d")), ErrMalformedKey},
		{Composite(String("a"), Int32(1)), ErrMalformedKey},
	} {
		if s, err := format(c.key); !errors.Is(err, c.want) {
			t.Errorf("format %x = %q, %v; want %v", []byte(c.key), s, err, c.want)
		}
	}
	for _, f := range []func(){
		func() { CompositeParser("", FromString) },
		func() { CompositeParser(",") },
		func() { CompositeFormatter("", FormatString) },
		func() { CompositeFormatter(",") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("a composite text without separator or parts did not panic")
				}
			}()
			f()
		}()
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder and formatter: they
// never panic; a key they accept is one the encoder makes, and a text the
// formatter gives parses back to the key.
func FuzzDecode(f *testing.F) {
	for _, c := range textCodecs {
		r := rand.New(rand.NewPCG(1, 2))
		f.Add([]byte(c.key(r)))
	}
	f.Add([]byte{})
	f.Add([]byte{6, 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'e'})
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range textCodecs {
			k := Key(bytes.Clone(data))
			if again, err := c.reencode(k); err == nil && !again.Equal(k) {
				t.Fatalf("%s: %x decodes to a value whose key is %x", c.name, data, []byte(again))
			}
			if text, err := c.format(k); err == nil {
				if parsed, err := c.parse(text); err != nil || !parsed.Equal(k) {
					t.Fatalf("%s: %x formats as %q, which parses to %x, %v", c.name, data, text, []byte(parsed), err)
				}
			}
		}
	})
}
