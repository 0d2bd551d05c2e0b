package stratacli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

// Importing a snapshot's table whose Go type the command does not know.
//
// A store keeps every object under its primary key and a snapshot records
// none, so the key must be computed from the object, which is the
// application's primary index's work. For a table stored with the JSON
// codec the user can say how: --key TABLE=FIELD:KIND[,FIELD:KIND...] takes
// the key from the named fields of each object's JSON, each encoded as a
// key of its kind (keykind.go), several making a composite key
// (index.Composite). The records are written as they are, under their
// codec's name and version and their type's identity, so that the
// application's Register finds the schema it binds.
//
// What is checked here: every object is JSON with the named fields, each
// of its kind; and the keys strictly increase in the snapshot's order,
// which is its table's primary key order, so a field or a kind that is not
// the primary index's is almost always caught before anything is written.
// What is not, without the types: that the key is exactly what the
// application's primary index computes (its Register checks every stored
// key and refuses the table with persist.ErrKeyChanged otherwise), that
// the objects decode into the application's type, and its secondary
// indexes, which it computes when it loads the table.

// rawKeySpec is how the key of a table of unknown type is computed from
// its objects' JSON: a field (a path of names, for nested objects) and
// the kind of its key, per part of the key.
type rawKeySpec struct {
	table string
	parts []rawKeyPart
}

type rawKeyPart struct {
	path  []string
	field string // as given, for messages
	kind  string
	parse func(string) (index.Key, error)
}

// parseRawKeySpec parses a --key of snapshot import:
// TABLE=FIELD:KIND[,FIELD:KIND...], FIELD a name or a dotted path.
func parseRawKeySpec(s string) (rawKeySpec, error) {
	table, spec, ok := strings.Cut(s, "=")
	if !ok || table == "" || spec == "" {
		return rawKeySpec{}, usagef("--key %q: no table; want TABLE=FIELD:KIND, or TABLE=FIELD:KIND,FIELD:KIND,… for a composite key (kinds: %s)", s, keyKindNames())
	}
	parts, err := parseFieldSpec("--key", s, spec)
	if err != nil {
		return rawKeySpec{}, err
	}
	return rawKeySpec{table: table, parts: parts}, nil
}

// parseFieldSpec parses FIELD:KIND[,FIELD:KIND...], the value of flag
// (whole, for messages) less its table, if any.
func parseFieldSpec(flag, whole, spec string) ([]rawKeyPart, error) {
	bad := func(why string) ([]rawKeyPart, error) {
		return nil, usagef("%s %q: %s; want FIELD:KIND, or FIELD:KIND,FIELD:KIND,… for a composite key (kinds: %s)", flag, whole, why, keyKindNames())
	}
	var parts []rawKeyPart
	for _, p := range strings.Split(spec, ",") {
		field, kind, ok := strings.Cut(p, ":")
		if !ok || field == "" {
			return bad(fmt.Sprintf("%q is not FIELD:KIND", p))
		}
		parse, known := keyKinds[kind]
		if !known {
			return bad(fmt.Sprintf("%q is no kind of key", kind))
		}
		parts = append(parts, rawKeyPart{path: strings.Split(field, "."), field: field, kind: kind, parse: parse})
	}
	return parts, nil
}

// String is the spec as --key gives it, without the table.
func (k rawKeySpec) String() string { return fieldSpecString(k.parts) }

// fieldSpecString is parts as FIELD:KIND,FIELD:KIND.
func fieldSpecString(parts []rawKeyPart) string {
	s := make([]string, len(parts))
	for i, p := range parts {
		s[i] = p.field + ":" + p.kind
	}
	return strings.Join(s, ",")
}

// errNoField: an object has no value (or null) at a field of a spec.
var errNoField = errors.New("no such field")

// fieldKeys computes the keys of the object whose JSON is data from the
// fields parts name: one key, the parts' keys joined as a composite if
// there are several; or, with one part whose field is an array, the key
// of each element. An object without one of the fields (or null there)
// fails with errNoField.
func fieldKeys(parts []rawKeyPart, data []byte) ([]index.Key, error) {
	var obj any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	keys := make([]index.Key, len(parts))
	for i, p := range parts {
		v := obj
		for _, name := range p.path {
			m, ok := v.(map[string]any)
			if ok {
				v, ok = m[name]
			}
			if !ok || v == nil {
				return nil, fmt.Errorf("field %q: %w", p.field, errNoField)
			}
		}
		if elems, isArray := v.([]any); isArray && len(parts) == 1 {
			var all []index.Key
			for _, e := range elems {
				k, err := fieldKey(p, e)
				if err != nil {
					return nil, err
				}
				all = append(all, k)
			}
			return all, nil
		}
		k, err := fieldKey(p, v)
		if err != nil {
			return nil, err
		}
		keys[i] = k
	}
	if len(keys) == 1 {
		return keys, nil
	}
	return []index.Key{index.Composite(keys...)}, nil
}

// fieldKey encodes the value v of the field of p as a key of p's kind.
func fieldKey(p rawKeyPart, v any) (index.Key, error) {
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case json.Number:
		text = v.String()
	case bool:
		text = fmt.Sprint(v)
	default:
		return nil, fmt.Errorf("field %q is %s, not a string, number or bool", p.field, jsonKind(v))
	}
	key, err := p.parse(text)
	if err != nil {
		return nil, fmt.Errorf("field %q: %w", p.field, err)
	}
	return key, nil
}

// keyOf computes the primary key of the object whose JSON is data: one
// key, never an array's.
func (k rawKeySpec) keyOf(data []byte) (index.Key, error) {
	keys, err := fieldKeys(k.parts, data)
	if err != nil {
		return nil, err
	}
	if len(keys) != 1 {
		return nil, fmt.Errorf("field %q is an array of %d: a primary key is one value", k.parts[0].field, len(keys))
	}
	return keys[0], nil
}

// jsonKind names the kind of a decoded JSON value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// rawObject is an object of a table of unknown type: its JSON as stored,
// and the key computed from it.
type rawObject struct {
	key   index.Key
	value []byte
}

// rawCodec stores a rawObject's bytes as they are, under the name and
// version of the codec that wrote them, and computes each decoded
// object's key, checking that the keys increase.
type rawCodec struct {
	name    string
	version uint32
	spec    rawKeySpec
	// last is the key of the object decoded last: the snapshot's records
	// come in primary key order, so each key must be above it.
	last  index.Key
	count int
}

// CodecName is the name of the codec that wrote the values.
func (c *rawCodec) CodecName() string { return c.name }

// Version is the version of the codec that wrote the values.
func (c *rawCodec) Version() uint32 { return c.version }

// Append appends the object's bytes as they are.
func (c *rawCodec) Append(dst []byte, o *rawObject) ([]byte, error) {
	return append(dst, o.value...), nil
}

// Decode copies data and computes its key.
func (c *rawCodec) Decode(data []byte, version uint32) (*rawObject, error) {
	c.count++
	key, err := c.spec.keyOf(data)
	if err != nil {
		return nil, usagef("--key %s=%s: object %d: %v", c.spec.table, c.spec, c.count, err)
	}
	if c.last != nil && bytes.Compare(key, c.last) <= 0 {
		return nil, usagef("--key %s=%s: object %d has key %x, not above the key %x of the object before it: the snapshot's "+
			"objects come in primary key order, so the table's primary key is not %s (wrong field, kind, or order of parts)",
			c.spec.table, c.spec, c.count, key, c.last, c.spec)
	}
	c.last = key
	return &rawObject{key: key, value: bytes.Clone(data)}, nil
}

// rawBinding creates the table of info, of unknown type, in db, and binds
// it to a codec that stores its records as they are with keys computed by
// spec. Only a table stored with the JSON codec can be: the keys of other
// encodings cannot be read without the type.
func rawBinding(db *strata.DB, info persist.SnapshotTableInfo, spec rawKeySpec) (persist.TableBinding, error) {
	if info.Codec != "json" {
		codec := info.Codec
		if codec == "" {
			codec = "not recorded (a snapshot of format 1)"
		}
		return nil, &wrapped{err: ErrTypeNeeded, msg: fmt.Sprintf(
			"--key %s=%s: table %s's codec is %s: only objects stored as JSON have fields this command can read keys from "+
				"without the table's type", spec.table, spec, info.Name, codec)}
	}
	primary := strata.Index[*rawObject, string]{
		Name:       "key",
		FromObject: func(o *rawObject) index.KeySet { return index.NewKeySet(o.key) },
		FromKey:    index.String,
		Unique:     true,
	}
	tbl, err := strata.NewTable(db, info.Name, primary)
	if err != nil {
		return nil, fmt.Errorf("table %q: %w", info.Name, err)
	}
	codec := &rawCodec{name: info.Codec, version: info.CodecVersion, spec: spec}
	return persist.Table(tbl, persist.Codec[*rawObject](codec), persist.TypeName(info.Type)), nil
}
