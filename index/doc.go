// Package index turns Go values into the byte keys of Strata's radix-tree
// indexes.
//
// # Order preservation
//
// The trees order keys with bytes.Compare, and a range scan or a
// LowerBound walks keys in that order. Every encoder here is
// order-preserving: for values a and b of its type,
//
//	bytes.Compare(Enc(a), Enc(b))
//
// has the sign of the natural comparison of a and b, and the keys are
// equal exactly when the values compare equal. So a scan over an index of
// Int64 keys visits -5 before 3, one over Time keys visits times in
// chronological order, and so on. Each encoder's doc comment names the
// comparison it follows (cmp.Compare, time.Time.Compare,
// netip.Addr.Compare, netip.Prefix.Compare) and its corner cases (NaN,
// -0, zones, invalid values).
//
// Every encoder Foo returning a Key has a twin AppendFoo that appends the
// same bytes to a caller's buffer and allocates only if that buffer must
// grow; hot paths reuse one buffer per transaction or iterator.
//
// # Prefix-freeness
//
// A set of keys is prefix-free when no key is a proper prefix of
// another. Fixed-width encodings (integers, Float64, Bool, Time,
// NetIPPrefix, NetIPAddr without zones) are prefix-free among themselves;
// String, Bytes and Stringer are not: "ab" is a prefix of "abc". That is
// what a prefix search over names wants, but such a key cannot simply be
// followed by another field: ("ab", "c") and ("a", "bc") would collide.
//
// AppendEscaped makes any key prefix-free while keeping its order: each
// 0x00 byte is written as 0x00 0xff and the key ends with 0x00 0x01.
// AppendEscapedPrefix omits the terminator, so prefix scans still work on
// escaped keys, and UnescapeNext decodes one escaped key.
//
// # Which to use
//
//   - A unique index on one field: the plain encoder for its type, such
//     as Uint64(id) or String(name). Prefix scans on strings work as is.
//   - An index on several fields: Composite(parts...) or a Builder; each
//     part is escaped, so keys sort by the first field, then the second,
//     and CompositePrefix finds all keys whose leading fields are given.
//   - A non-unique secondary index: the database stores the escaped
//     secondary key followed by the primary key (AppendEscaped), so that
//     entries of different objects never collide and all entries of one
//     secondary key share the prefix AppendEscaped(nil, key).
//   - A field with several values (tags, addresses): a KeySet holding one
//     key per value. A KeySet of one key does not allocate. Set makes one
//     from a part.Set, StringSlice and Slice from a slice, Seq and Seq2
//     from an iterator, StringMap from a map's keys.
//
// # Keys as text, and back to values
//
// Every encoder Foo has a decoder, a parser and a formatter:
//
//   - DecodeFoo(k) is the inverse of Foo: for a key Foo makes it returns a
//     value v with Foo(v) equal to k (where Foo maps several values to one
//     key, one of them: +0 for -0, one NaN, the UTC time of an instant),
//     and for any other key an error wrapping ErrMalformedKey;
//   - FooString(text) reads a value typed by a person and encodes it as
//     Foo does (statedb's names: Uint64String, FromString for strings);
//   - FormatFoo(k) renders a key of Foo as the text FooString reads back
//     to the same key.
//
// Parsers have the signature of strata.Index's FromString and formatters
// that of its ToString, so an index can name them as they are. The text
// forms are the standard library's:
//
//   - integers in base 10 (strconv.ParseInt, strconv.ParseUint), refused
//     when out of range for the width;
//   - Float64 as strconv.ParseFloat reads it ("1.5", "-1e9", "NaN",
//     "+Inf"), written in the shortest form that reads back exactly;
//   - Bool as strconv.ParseBool reads it ("true", "0", ...), written
//     "true" or "false";
//   - String as the text itself;
//   - Bytes in hexadecimal, with or without a leading "0x", written with
//     it;
//   - Time in RFC 3339 with optional fractional seconds
//     (time.RFC3339Nano), written in UTC;
//   - NetIPAddr and NetIPPrefix as netip.ParseAddr and netip.ParsePrefix
//     read them ("10.0.0.1", "fe80::1%eth0", "10.1.2.3/8"), and the empty
//     text for the zero Addr or Prefix, as their UnmarshalText does;
//   - composites as their parts' texts joined by a separator
//     (CompositeParser, CompositeFormatter).
//
// A parser's error wraps ErrParseKey. A formatter's wraps ErrMalformedKey
// when the key is not one its encoder makes, and ErrNoTextForm when no
// text reads back to it (a time after year 9999, say).
package index
