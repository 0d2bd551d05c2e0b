package stratacli

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/internal/wirejson"
	"github.com/strata-db/strata/persist"
)

// view is how the command shows the objects of one table: decoded by its
// registered type, as the JSON they are stored as, or as hex.
type view struct {
	name string
	// stored is the table's schema in the store or snapshot, nil if none
	// is recorded.
	stored *persist.Schema
	// version is the codec version of a snapshot's records (a store's
	// records carry their own).
	version uint32
	// typed decodes the table, nil if its type is not registered or the
	// stored schema is not one it reads (note says why).
	typed typedTable
	note  string
	// json: raw values that are the objects' JSON (the JSON codec, at the
	// version of the schema).
	json bool
	// scratch is the row that row fills, reused, and cur its values: a
	// row is written before the next is made.
	scratch fields
	cur     current
	// keyKind renders a primary key as text of the kind --key-format
	// names, for a table of unknown type; nil: keys are shown in hex
	// only. badKey is called with a key it cannot render (shown as "").
	keyKind func(index.Key) (string, error)
	badKey  func(key []byte, err error)
	// rowKey is the primary key of the object row made last, nil if it
	// is not known (a snapshot's record of unknown type). It points into
	// the row's record or object: valid until the next row.
	rowKey []byte
}

// session holds the registered tables of one command, created in a
// database of its own.
type session struct {
	a      *app
	db     *strata.DB
	tables map[string]typedTable
}

// newSession creates every registered table in a new database.
func (a *app) newSession() (*session, error) {
	s := &session{a: a, db: strata.New(), tables: map[string]typedTable{}}
	for name, tt := range a.cfg.types {
		t, err := tt.create(s.db)
		if err != nil {
			return nil, err
		}
		s.tables[name] = t
	}
	return s, nil
}

// view returns the view of the table name stored with schema stored, whose
// records (in a snapshot) are of codec version version.
func (s *session) view(name string, stored *persist.Schema, version uint32) *view {
	v := &view{name: name, stored: stored, version: version}
	if tt, ok := s.a.cfg.types[name]; ok {
		if ok, why := compatible(stored, tt.schema()); ok {
			v.typed = s.tables[name]
			return v
		} else {
			v.note = fmt.Sprintf("table %s is shown raw: %s", name, why)
		}
	}
	v.json = stored != nil && stored.Codec == "json" && (version == 0 || version == stored.Version)
	return v
}

// typeNeeded returns the error of an operation that needs the table's type.
func (v *view) typeNeeded(what string) error {
	if v.note != "" {
		return usagef("%s needs table %s's type: %s", what, v.name, v.note)
	}
	return usagef("%s needs table %s's type, which this command does not know (an application registers it: stratacli.WithTable)", what, v.name)
}

// decode decodes rec with the table's type.
func (v *view) decode(rec record) (any, error) {
	version := rec.version
	if version == 0 {
		version = v.version
	}
	obj, err := v.typed.decode(rec.value, version)
	if err != nil {
		return nil, fmt.Errorf("table %s: decoding the object at revision %d: %w", v.name, rec.revision, err)
	}
	return obj, nil
}

// row returns the output row of rec: its key (text with a registered
// type, hex otherwise; a snapshot's records have none unless the type
// computes it), its revision and the object (JSON), or the value in hex.
// The row is valid until the next call: its values point into the view
// (pointers go into an interface without an allocation; the numbers and
// slices themselves would not).
func (v *view) row(rec record, withTable bool) (fields, error) {
	row := v.scratch[:0]
	if withTable {
		row = append(row, field{"table", &v.name})
	}
	if v.typed != nil {
		obj, err := v.decode(rec)
		if err != nil {
			return nil, err
		}
		return v.objectRow(row, obj, rec.revision)
	}
	v.rowKey = rec.key
	v.cur = current{revision: rec.revision, version: rec.version, key: rec.key, value: rec.value, raw: rec.value}
	if v.cur.version == 0 {
		v.cur.version = v.version
	}
	if rec.key != nil {
		if v.keyKind != nil {
			row = append(row, field{"key", v.renderKey(rec.key)})
		}
		row = append(row, field{"key_hex", &v.cur.key})
	}
	row = append(row, field{"revision", &v.cur.revision})
	if v.json {
		// The JSON codec's values are JSON (check validates them).
		row = append(row, field{"object", &v.cur.raw})
	} else {
		row = append(row, field{"version", &v.cur.version}, field{"value_hex", &v.cur.value})
	}
	v.scratch = row
	return row, nil
}

// appendRecordJSON appends the JSON of the row of rec that row makes for
// a view without a registered type (v.typed == nil), byte for byte as
// that row's fields write it, without making them: the dump's JSON output
// writes each record's line straight into its buffer
// (BenchmarkSnapshotRead/dump-json-jsonl; TestRecordJSON keeps the two
// equal). The keys and field names are constants that need no escaping.
func (v *view) appendRecordJSON(b []byte, rec record, withTable bool) []byte {
	b = append(b, '{')
	if withTable {
		b = append(wirejson.AppendString(append(b, `"table":`...), v.name), ',')
	}
	if rec.key != nil {
		if v.keyKind != nil {
			b = append(wirejson.AppendString(append(b, `"key":`...), v.renderKey(rec.key)), ',')
		}
		b = append(appendHex(append(b, `"key_hex":`...), rec.key), ',')
	}
	b = strconv.AppendUint(append(b, `"revision":`...), rec.revision, 10)
	if v.json {
		b = appendRaw(append(b, `,"object":`...), rec.value)
	} else {
		version := rec.version
		if version == 0 {
			version = v.version
		}
		b = strconv.AppendUint(append(b, `,"version":`...), uint64(version), 10)
		b = appendHex(append(b, `,"value_hex":`...), rec.value)
	}
	v.rowKey = rec.key
	return append(b, '}')
}

// renderKey renders a primary key with keyKind: "" if it is not of the
// kind, which badKey is told.
func (v *view) renderKey(key []byte) string {
	text, err := v.keyKind(key)
	if err != nil {
		if v.badKey != nil {
			v.badKey(key, err)
		}
		return ""
	}
	return text
}

// setKeyKind makes the rows of a table of unknown type show their primary
// keys as text of the kind of the key format format (composite parts
// joined by sep), if it names one; the first key that is not of it is
// noted on stderr.
func (a *app) setKeyKind(v *view, format, sep string) {
	if v.typed != nil {
		return
	}
	if v.keyKind = keyFormatter(format, sep); v.keyKind == nil {
		return
	}
	told := false
	v.badKey = func(key []byte, err error) {
		if !told {
			told = true
			a.logf("note: table %s: key %x is not a key of kind %s (its key column is empty): %v", v.name, key, format, err)
		}
	}
}

// current holds the values of the row row made last.
type current struct {
	revision uint64
	version  uint32
	key      hexBytes
	value    hexBytes
	raw      json.RawMessage
}

// objectRow appends to row the key, revision and JSON of a decoded object.
func (v *view) objectRow(row fields, obj any, rev uint64) (fields, error) {
	key, err := v.typed.primaryKey(obj)
	if err != nil {
		return nil, err
	}
	v.rowKey = key
	text, _ := v.typed.anyTable().KeyString("", key)
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("table %s: the object at revision %d: %w", v.name, rev, err)
	}
	t := v.typed.anyTable()
	return append(row, field{"key", text}, field{"revision", rev}, field{"object", objectValue(t.TableHeader(), t.TableRow(obj), data)}), nil
}

// parseKey encodes a key given on the command line for the named index:
// as text through the index (a registered type), in hex (--key-format
// hex), or as text of the kind --key-format names, which with hex is the
// way for a table of unknown type (keykind.go).
func (v *view) parseKey(indexName, text, format, sep string) (index.Key, error) {
	if parse := keyParser(format, sep); parse != nil {
		k, err := parse(text)
		if err != nil && format != keyFormatHex {
			err = fmt.Errorf("table %s: key %q as %s: %w", v.name, text, format, err)
		}
		return k, err
	}
	if v.typed == nil {
		if v.note != "" {
			return nil, &wrapped{err: ErrKeyKindUnknown, msg: fmt.Sprintf("%v; %s", keyKindError(v.name, indexName, text), v.note)}
		}
		return nil, keyKindError(v.name, indexName, text)
	}
	return v.typed.anyTable().ParseKey(indexName, text)
}
