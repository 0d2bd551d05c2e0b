package persist

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Check checks that the store's records other than its objects are what
// this package writes, and calls report with an error wrapping ErrCorrupt
// for each one that is not:
//
//   - the format record is there and well formed;
//   - every catalog entry has a well-formed table id, used by no other
//     entry, and a well-formed schema record, if any, and revision record,
//     if any;
//   - every schema, revision and object record belongs to a table of the
//     catalog;
//   - no key has a tag this package does not write.
//
// It does not read the objects, whose key ranges it skips: Objects reports
// an object whose value is malformed, CheckLSM damaged media. It returns an
// error only if the store could not be read.
func (r *Reader) Check(report func(error)) (err error) {
	defer recoverFatal(&err)
	problem := func(format string, args ...any) {
		report(fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), ErrCorrupt))
	}
	if v, ok, err := r.get(formatKey); err != nil {
		return fromPebble(err)
	} else if !ok {
		problem("no format record")
	} else if _, n := binary.Uvarint(v); n <= 0 {
		problem("format record %x: malformed", v)
	}

	it, err := r.db.NewIter(&pebble.IterOptions{})
	if err != nil {
		return fromPebble(err)
	}
	defer it.Close()
	// Pass 1, the catalog: names of each id.
	names := map[uint32]string{}
	for it.SeekGE(catalogPrefix); it.Valid() && it.Key()[0] == tagCatalog; it.Next() {
		name := string(it.Key()[1:])
		id, err := parseUvarint(it.Value())
		switch {
		case err != nil || id == 0 || id > uint64(^uint32(0)):
			problem("catalog entry %q: table id %x: malformed", name, it.Value())
		case names[uint32(id)] != "":
			problem("catalog entries %q and %q: both have table id %d", names[uint32(id)], name, id)
		default:
			names[uint32(id)] = name
		}
	}
	if err := it.Error(); err != nil {
		return fromPebble(err)
	}
	// Pass 2, every key in order, skipping each table's objects.
	tableOf := func(key []byte, what string) (uint32, bool) {
		if len(key) < 5 {
			problem("%s key %x: malformed", what, key)
			return 0, false
		}
		id := binary.BigEndian.Uint32(key[1:5])
		if _, ok := names[id]; !ok {
			problem("%s of table id %d, which the catalog does not name", what, id)
			return id, false
		}
		return id, true
	}
	for it.First(); it.Valid(); {
		key := it.Key()
		switch key[0] {
		case tagMeta:
			if string(key) != string(formatKey) && string(key) != string(appliedKey) {
				problem("unknown record %q", key)
			}
		case tagCatalog:
		case tagApplied:
			if id, ok := tableOf(key, "applied mark"); ok && len(key) != 5 {
				problem("applied mark of table %q: malformed key %x", names[id], key)
			}
		case tagSchema:
			if id, ok := tableOf(key, "schema"); ok {
				if len(key) != 5 {
					problem("schema key %x: malformed", key)
				} else if _, rest, err := parseSchema(it.Value()); err != nil || len(rest) != 0 {
					problem("table %q: schema record %x: malformed", names[id], it.Value())
				}
			}
		case tagRevision:
			if id, ok := tableOf(key, "revision"); ok {
				if len(key) != 5 {
					problem("revision key %x: malformed", key)
				} else if _, err := parseUvarint(it.Value()); err != nil {
					problem("table %q: revision record %x: malformed", names[id], it.Value())
				}
			}
		case tagTable:
			if len(key) < 5 {
				problem("object key %x: malformed", key)
				break
			}
			// Report objects of no table once, and skip the table's
			// objects.
			id, _ := tableOf(key, "objects")
			it.SeekGE(makeTableKeys(id).upper)
			continue
		default:
			problem("unknown record %q", key)
		}
		it.Next()
	}
	return fromPebble(it.Error())
}

// CheckLSM reads every file of Pebble's LSM and checks Pebble's own
// invariants: every block's checksum, the order of the keys in each file,
// the levels' order, range deletions. A damaged store fails with
// ErrCorrupt.
func (r *Reader) CheckLSM() (err error) {
	defer recoverFatal(&err)
	if err := r.db.CheckLevels(nil); err != nil {
		err = fromPebble(err)
		if !errors.Is(err, ErrCorrupt) {
			// Every failure of Pebble's level checker is damage.
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return fmt.Errorf("persist: %s: %w", r.dir, err)
	}
	return nil
}
