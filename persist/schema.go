package persist

import (
	"encoding/binary"
	"fmt"
	"reflect"
)

// schema is what a table holds, as the store's catalog and a snapshot's
// header record it: the codec's name and version, and an identity of the
// object type. Register and ReadSnapshot compare the recorded schema with
// the table's binding before they decode anything, so that a table of
// another type never loads zero-valued garbage (JSON decodes any record
// into any struct) or fails with a misleading error.
type schema struct {
	codec   string // the codec's name (codecName)
	version uint32 // the codec's version
	typ     string // the object type's identity (typeIdentity, or TypeName)
}

func (sc schema) String() string {
	return fmt.Sprintf("codec %s version %d, type %s", sc.codec, sc.version, sc.typ)
}

// CodecNamer is implemented by codecs that name their encoding. The name is
// recorded with the table (in the store and in snapshots) and compared at
// registration: a table stored with another codec's name is refused with
// ErrSchemaMismatch unless the codec's version went up. The codecs of this
// package are named "json", "binary" and "funcs"; a Versioned codec has the
// name of its current codec. A codec that does not implement CodecNamer is
// named by its Go type.
type CodecNamer interface {
	CodecName() string
}

// codecName returns the name of codec.
func codecName[Obj any](codec Codec[Obj]) string {
	if n, ok := codec.(CodecNamer); ok {
		return n.CodecName()
	}
	return fmt.Sprintf("%T", codec)
}

// typeIdentity returns the identity of type Obj recorded by default: its
// package path and name, with the pointers and other constructors around
// them, such as "*example.com/app.Node". A type without a name (a struct
// literal) gives its Go syntax.
func typeIdentity[Obj any]() string {
	return typeString(reflect.TypeFor[Obj]())
}

func typeString(t reflect.Type) string {
	switch {
	case t.Name() != "" && t.PkgPath() != "":
		return t.PkgPath() + "." + t.Name()
	case t.Kind() == reflect.Pointer:
		return "*" + typeString(t.Elem())
	case t.Kind() == reflect.Slice:
		return "[]" + typeString(t.Elem())
	case t.Kind() == reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), typeString(t.Elem()))
	case t.Kind() == reflect.Map:
		return "map[" + typeString(t.Key()) + "]" + typeString(t.Elem())
	default:
		return t.String()
	}
}

// checkSchema compares the schema a table was stored with (nil: none was
// recorded, by an older release or for a new table) with the schema it is
// bound with now. The codec's version may go up (old values are decoded by
// their version, which is a Versioned codec's migration), and with it the
// codec's name and the type may change; without a higher version they must
// be the same. A lower version is refused: values of the newer one cannot
// be read.
func checkSchema(stored *schema, now schema) error {
	switch {
	case stored == nil || *stored == now:
		return nil
	case stored.version > now.version:
		return fmt.Errorf("stored with %v; bound with %v: %w", *stored, now, ErrUnknownVersion)
	case stored.version == now.version:
		return fmt.Errorf("stored with %v; bound with %v (a change of codec or type needs a higher codec version that migrates the old values): %w",
			*stored, now, ErrSchemaMismatch)
	}
	return nil
}

// appendSchema appends the encoding of sc: uvarint version, then the codec
// name and the type, each a uvarint length and its bytes.
func appendSchema(dst []byte, sc schema) []byte {
	dst = binary.AppendUvarint(dst, uint64(sc.version))
	dst = binary.AppendUvarint(dst, uint64(len(sc.codec)))
	dst = append(dst, sc.codec...)
	dst = binary.AppendUvarint(dst, uint64(len(sc.typ)))
	return append(dst, sc.typ...)
}

// parseSchema decodes what appendSchema wrote, and returns the rest.
func parseSchema(b []byte) (schema, []byte, error) {
	var sc schema
	v, n := binary.Uvarint(b)
	if n <= 0 || v > uint64(^uint32(0)) {
		return sc, nil, ErrCorrupt
	}
	sc.version, b = uint32(v), b[n:]
	str := func() (string, bool) {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return "", false
		}
		s := string(b[n : n+int(l)])
		b = b[n+int(l):]
		return s, true
	}
	var ok1, ok2 bool
	sc.codec, ok1 = str()
	sc.typ, ok2 = str()
	if !ok1 || !ok2 {
		return sc, nil, ErrCorrupt
	}
	return sc, b, nil
}
