package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// The key space of a store. Every key begins with a tag byte that says what
// it is:
//
//	'm' "format"           -> uvarint store format, uvarint Pebble format major version
//	'c' table name         -> uvarint table id                 (the catalog)
//	's' table id (4 bytes) -> the table's schema (schema.go)    (store format 2)
//	'r' table id (4 bytes) -> uvarint table revision
//	't' table id (4 bytes) primary key -> value                 (the objects)
//
// A table id is a uint32, big endian, so that the objects of one table are
// one contiguous key range, ['t' id, 't' id+1), scanned with iterator bounds
// and deleted with one range deletion. Table revisions live outside that
// range so that neither touches them.
//
// A value is [uvarint codec version][uvarint object revision][codec bytes].
const (
	tagMeta     = 'm'
	tagCatalog  = 'c'
	tagRevision = 'r'
	tagSchema   = 's'
	tagTable    = 't'
)

// formatKey holds the store's format versions.
var formatKey = []byte{tagMeta, 'f', 'o', 'r', 'm', 'a', 't'}

// readFormat reads the store's format record (formatKey): the store format
// it holds (0 without a record), and the record as stored (nil without
// one). A record that does not begin with a uvarint fails with ErrCorrupt,
// a format newer than this release's with ErrNewerFormat. Store.Open and
// Reader share it; a Reader reads on past ErrCorrupt, for Check.
func readFormat(db *pebble.DB) (format uint64, rec []byte, err error) {
	v, closer, err := db.Get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	rec = bytes.Clone(v)
	closer.Close()
	format, n := binary.Uvarint(rec)
	if n <= 0 {
		return 0, rec, fmt.Errorf("format key: %w", ErrCorrupt)
	}
	if format > storeFormat {
		return format, rec, fmt.Errorf("store format %d, this release knows up to %d: %w", format, storeFormat, ErrNewerFormat)
	}
	return format, rec, nil
}

// catalogPrefix and catalogEnd bound the catalog's keys.
var (
	catalogPrefix = []byte{tagCatalog}
	catalogEnd    = []byte{tagCatalog + 1}
)

func catalogKey(name string) []byte { return append([]byte{tagCatalog}, name...) }

// schemaKey is the key of the schema of table id: what the table holds.
func schemaKey(id uint32) []byte { return binary.BigEndian.AppendUint32([]byte{tagSchema}, id) }

// tableKeys are the keys of one table, computed once at registration.
type tableKeys struct {
	prefix []byte // 't' id: every object key begins with it
	upper  []byte // 't' id+1: the exclusive upper bound of the objects
	rev    []byte // 'r' id: the table's revision
}

func makeTableKeys(id uint32) tableKeys {
	k := tableKeys{
		prefix: binary.BigEndian.AppendUint32([]byte{tagTable}, id),
		rev:    binary.BigEndian.AppendUint32([]byte{tagRevision}, id),
	}
	if id == ^uint32(0) {
		k.upper = []byte{tagTable + 1}
	} else {
		k.upper = binary.BigEndian.AppendUint32([]byte{tagTable}, id+1)
	}
	return k
}

// appendValueHeader appends a value's header: the codec version and the
// object's revision.
func appendValueHeader(dst []byte, version uint32, rev uint64) []byte {
	dst = binary.AppendUvarint(dst, uint64(version))
	return binary.AppendUvarint(dst, rev)
}

// parseValue splits a stored value into its header and the codec's bytes.
func parseValue(v []byte) (version uint32, rev uint64, data []byte, err error) {
	ver, n := binary.Uvarint(v)
	if n <= 0 || ver > uint64(^uint32(0)) {
		return 0, 0, nil, fmt.Errorf("value header: %w", ErrCorrupt)
	}
	rev, m := binary.Uvarint(v[n:])
	if m <= 0 {
		return 0, 0, nil, fmt.Errorf("value header: %w", ErrCorrupt)
	}
	return uint32(ver), rev, v[n+m:], nil
}

// parseUvarint parses a value that is one uvarint.
func parseUvarint(v []byte) (uint64, error) {
	x, n := binary.Uvarint(v)
	if n <= 0 || n != len(v) {
		return 0, ErrCorrupt
	}
	return x, nil
}
