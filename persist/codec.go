package persist

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
)

// Codec encodes and decodes the objects of one table. It is bound to the
// table once, at registration, and called directly for every object: no
// lookup, reflection or boxing per object.
//
// Every stored value carries the codec's Version. Decode gets the version
// the value was written with: a codec that changed its encoding keeps
// reading old values (see Versioned, which hands them to a migration), and
// a value written by a newer version than the codec knows is refused with
// ErrUnknownVersion.
//
// The store and snapshots also record the codec's name (CodecNamer) and
// version with the table, and refuse a table written by another codec
// unless the version went up (ErrSchemaMismatch).
type Codec[Obj any] interface {
	// Version is the version of the encoding Append writes.
	Version() uint32
	// Append appends the encoding of obj to dst.
	Append(dst []byte, obj Obj) ([]byte, error)
	// Decode decodes data, written by version version (at most Version).
	// data is only valid during the call: Decode must copy what it keeps.
	Decode(data []byte, version uint32) (Obj, error)
}

// ErrUnknownVersion: a stored value was written by a newer codec version
// than the registered codec knows.
var ErrUnknownVersion = errors.New("value written by an unknown, newer codec version")

// JSON returns a codec that stores objects as encoding/json does: easy and
// readable, not fast. Its name is "json" and its version 1.
//
// encoding/json decodes any record into any struct, dropping the fields it
// does not know and leaving the ones it does not find zero: the schema
// check (ErrSchemaMismatch) catches a table of another type, but not a
// field renamed within the same type. StrictJSON refuses unknown fields.
func JSON[Obj any]() Codec[Obj] { return jsonCodec[Obj]{} }

// StrictJSON is JSON, except that a record with a field the object type
// does not have fails to decode: a field renamed or removed without a
// migration is an error at load, not a value silently dropped. It writes
// what JSON writes and has the same name and version, so a table may switch
// between the two.
func StrictJSON[Obj any]() Codec[Obj] { return jsonCodec[Obj]{strict: true} }

type jsonCodec[Obj any] struct{ strict bool }

func (jsonCodec[Obj]) Version() uint32 { return 1 }

// CodecName returns "json".
func (jsonCodec[Obj]) CodecName() string { return "json" }

func (jsonCodec[Obj]) Append(dst []byte, obj Obj) ([]byte, error) {
	b, err := json.Marshal(obj)
	return append(dst, b...), err
}

func (c jsonCodec[Obj]) Decode(data []byte, version uint32) (obj Obj, err error) {
	if version != 1 {
		return obj, fmt.Errorf("json codec: version %d: %w", version, ErrUnknownVersion)
	}
	if !c.strict {
		err = json.Unmarshal(data, &obj)
		return obj, err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&obj); err != nil {
		return obj, err
	}
	if d.More() {
		return obj, errors.New("json codec: data after the value")
	}
	return obj, nil
}

// BinaryObject is the constraint of Binary: a pointer to T that appends
// its binary encoding and decodes it.
type BinaryObject[T any] interface {
	*T
	encoding.BinaryAppender
	encoding.BinaryUnmarshaler
}

// Binary returns a codec for objects of type *T that implement
// encoding.BinaryAppender and encoding.BinaryUnmarshaler, the fastest way
// to store them. Its name is "binary" and its version 1. UnmarshalBinary must copy the bytes it
// keeps (the standard library's contract).
func Binary[T any, PT BinaryObject[T]]() Codec[PT] { return binaryCodec[T, PT]{} }

type binaryCodec[T any, PT BinaryObject[T]] struct{}

func (binaryCodec[T, PT]) Version() uint32 { return 1 }

// CodecName returns "binary".
func (binaryCodec[T, PT]) CodecName() string { return "binary" }

func (binaryCodec[T, PT]) Append(dst []byte, obj PT) ([]byte, error) { return obj.AppendBinary(dst) }

func (binaryCodec[T, PT]) Decode(data []byte, version uint32) (PT, error) {
	if version != 1 {
		return nil, fmt.Errorf("binary codec: version %d: %w", version, ErrUnknownVersion)
	}
	obj := PT(new(T))
	if err := obj.UnmarshalBinary(data); err != nil {
		return nil, err
	}
	return obj, nil
}

// Funcs is a Codec made of functions, for encodings of your own.
type Funcs[Obj any] struct {
	V   uint32 // the version Encode writes
	Enc func(dst []byte, obj Obj) ([]byte, error)
	// Dec decodes data written by any version up to V. It must copy what
	// it keeps of data.
	Dec func(data []byte, version uint32) (Obj, error)
}

// Version returns V.
func (f Funcs[Obj]) Version() uint32 { return f.V }

// CodecName returns "funcs".
func (f Funcs[Obj]) CodecName() string { return "funcs" }

// Append calls Enc.
func (f Funcs[Obj]) Append(dst []byte, obj Obj) ([]byte, error) { return f.Enc(dst, obj) }

// Decode calls Dec, after refusing versions above V.
func (f Funcs[Obj]) Decode(data []byte, version uint32) (Obj, error) {
	if version > f.V {
		var zero Obj
		return zero, fmt.Errorf("codec version %d, value version %d: %w", f.V, version, ErrUnknownVersion)
	}
	return f.Dec(data, version)
}

// Versioned returns a codec for an encoding that changed over time: it
// writes with current, stamping values with version, decodes values of that
// version with current, and hands values of older versions to migrate, which
// turns them into today's objects. Values of newer versions are refused with
// ErrUnknownVersion. version must be above every version already stored.
// Its name is current's: with a higher version, the object type and the
// codec may change (the migration reads the old values).
//
// The migration gets the stored bytes and their version, and decodes them
// as the codec of that version did, however different (JSON bytes for a
// codec that is Binary now, say).
func Versioned[Obj any](current Codec[Obj], version uint32, migrate func(data []byte, version uint32) (Obj, error)) Codec[Obj] {
	return versioned[Obj]{current: current, version: version, migrate: migrate}
}

type versioned[Obj any] struct {
	current Codec[Obj]
	version uint32
	migrate func([]byte, uint32) (Obj, error)
}

func (v versioned[Obj]) Version() uint32 { return v.version }

func (v versioned[Obj]) CodecName() string { return codecName(v.current) }

func (v versioned[Obj]) Append(dst []byte, obj Obj) ([]byte, error) {
	return v.current.Append(dst, obj)
}

func (v versioned[Obj]) Decode(data []byte, version uint32) (Obj, error) {
	switch {
	case version == v.version:
		return v.current.Decode(data, v.current.Version())
	case version < v.version && v.migrate != nil:
		return v.migrate(data, version)
	default:
		var zero Obj
		return zero, fmt.Errorf("codec version %d, value version %d: %w", v.version, version, ErrUnknownVersion)
	}
}
