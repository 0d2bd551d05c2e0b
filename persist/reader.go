package persist

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"log/slog"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Reader reads a store without registering its tables, for tools that
// inspect, check, dump or export a store whose tables' Go types they do not
// know (the strata command): the catalog, each table's schema and
// revision, and its objects as stored, keys and encoded values. Programs
// that know their tables' types use a Store.
//
// A Reader never writes to the directory: Pebble is opened read-only, and
// the log of a store that was not closed is replayed in memory only. Like a
// Store it holds the directory's lock, so it reads a store that nothing
// writes: OpenReader of a directory that a Store has open, in this process
// or another, fails with ErrLocked, and so does Open while a Reader has
// it.
//
// A Reader is safe for concurrent use; close it when done.
type Reader struct {
	db      *pebble.DB
	dir     string
	lock    *pebble.Lock
	release func()
	format  StoreFormat
	// tables is the catalog, sorted by name: the entries that are well
	// formed (Check reports the others).
	tables []StoredTable
}

// StoreFormat is the format of a store's files.
type StoreFormat struct {
	// Store is the format of the layout this package writes on top of
	// Pebble: 2 now (1 had no schemas); 0 if the store has no format
	// record.
	Store uint64
	// Pebble is the format major version of Pebble's files.
	Pebble uint64
}

// StoredTable is a table of a store's catalog.
type StoredTable struct {
	// Name is the table's name.
	Name string
	// ID is the table's number in the store, which its keys begin with.
	ID uint32
	// Schema is what the table was last registered with, nil if none was
	// recorded (a store written before format 2, whose table has not been
	// registered since).
	Schema *Schema
	// Revision is the revision recorded for the table, 0 if none: it is
	// written only when a commit's last change to the table was a delete.
	// The table's revision is the greater of it and its objects'
	// revisions, as Register restores it.
	Revision uint64
}

// Schema is what the store and snapshots record of a table's objects, and
// compare with a table's binding before they decode anything.
type Schema struct {
	// Codec is the codec's name (CodecNamer), such as "json" or "binary".
	Codec string
	// Version is the codec's version. Every value also carries the
	// version that wrote it, at most this one.
	Version uint32
	// Type is the identity of the object type: by default its package
	// path and name, such as "*example.com/app.Node" (see TypeName).
	Type string
}

func (sc Schema) String() string { return toSchema(sc).String() }

func fromSchema(sc schema) Schema { return Schema{Codec: sc.codec, Version: sc.version, Type: sc.typ} }
func toSchema(sc Schema) schema   { return schema{codec: sc.Codec, version: sc.Version, typ: sc.Type} }

// TableSchema returns the schema that Table records for a table bound to
// codec with opts: the codec's name and version and the identity of Obj
// (or the one TypeName gives). A tool that decodes a stored table compares
// it with the StoredTable's or SnapshotTableInfo's before it trusts codec
// with the table's values.
func TableSchema[Obj any](codec Codec[Obj], opts ...TableOption) Schema {
	var o tableOptions
	for _, opt := range opts {
		opt(&o)
	}
	sc := schema{codec: codecName(codec), version: codec.Version(), typ: typeIdentity[Obj]()}
	if o.typeName != "" {
		sc.typ = o.typeName
	}
	return fromSchema(sc)
}

// StoredRecord is an object of a table as the store holds it.
type StoredRecord struct {
	// Key is the object's primary key (without the table's prefix).
	Key []byte
	// Version is the version of the codec that wrote Value.
	Version uint32
	// Revision is the object's revision.
	Revision uint64
	// Value is the codec's encoding of the object.
	Value []byte
}

// OpenReader opens the store in directory dir for reading only. A directory
// that does not exist or holds no store fails with ErrNoStore, one a Store
// or Reader has open with ErrLocked, a store of a newer format with
// ErrNewerFormat, and one Pebble cannot read with ErrCorrupt.
//
// Of opts, FS, Logger, CacheSize and Pebble apply; the rest concern
// writing.
func OpenReader(dir string, opts Options) (_ *Reader, err error) {
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	fail := func(err error) error { return fmt.Errorf("persist: open %s for reading: %w", dir, err) }
	// Pebble's lock would create its lock file: look for it first, so
	// that a directory without a store is left as it is.
	if _, err := fsys.Stat(fsys.PathJoin(dir, "LOCK")); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fail(fmt.Errorf("%w: %w", ErrNoStore, err))
		}
		return nil, fail(err)
	}
	r := &Reader{dir: dir}
	if r.release, err = claimDir(fsys, dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if r.db != nil {
				closeQuietly(r.db)
			}
			if r.lock != nil {
				r.lock.Close()
			}
			r.release()
		}
	}()
	defer recoverFatal(&err)
	if r.lock, err = pebble.LockDirectory(dir, fsys); err != nil {
		if lockedError(err) {
			return nil, fail(fmt.Errorf("%w (%v)", ErrLocked, err))
		}
		return nil, fail(fmt.Errorf("lock: %w", err))
	}
	po := &pebble.Options{CacheSize: opts.CacheSize}
	if po.CacheSize == 0 {
		po.CacheSize = defaultCacheSize
	}
	if opts.Pebble != nil {
		opts.Pebble(po)
	}
	po.FS, po.Lock = fsys, r.lock
	po.ReadOnly, po.ErrorIfNotExists = true, true
	po.Logger = &pebbleLogger{log: log, fs: fsys}
	po.LoggerAndTracer = nil
	po.EventListener = eventListener(log, nil)
	if r.db, err = pebble.Open(dir, po); err != nil {
		if errors.Is(err, pebble.ErrDBDoesNotExist) {
			return nil, fail(ErrNoStore)
		}
		return nil, fail(fromPebble(err))
	}
	if err := r.readMeta(); err != nil {
		return nil, fail(fromPebble(err))
	}
	return r, nil
}

// closeQuietly closes a Pebble database whose opening failed, recovering a
// panic of a database that damaged media left holding references.
func closeQuietly(db *pebble.DB) {
	defer func() { _ = recover() }()
	_ = db.Close()
}

// readMeta reads the store's format and its catalog: the entries that are
// well formed.
func (r *Reader) readMeta() error {
	r.format.Pebble = uint64(r.db.FormatMajorVersion())
	format, _, err := readFormat(r.db)
	switch {
	case errors.Is(err, ErrCorrupt):
		// Read on: Check reports the malformed record, and the format
		// reads as 0 (none recorded).
	case err != nil:
		return err
	default:
		r.format.Store = format
	}
	it, err := r.db.NewIter(&pebble.IterOptions{LowerBound: catalogPrefix, UpperBound: catalogEnd})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		id, err := parseUvarint(it.Value())
		if err != nil || id == 0 || id > uint64(^uint32(0)) {
			continue
		}
		t := StoredTable{Name: string(it.Key()[1:]), ID: uint32(id)}
		if v, ok, err := r.get(schemaKey(t.ID)); err != nil {
			return err
		} else if ok {
			sc, rest, err := parseSchema(v)
			if err != nil || len(rest) != 0 {
				continue
			}
			s := fromSchema(sc)
			t.Schema = &s
		}
		if v, ok, err := r.get(makeTableKeys(t.ID).rev); err != nil {
			return err
		} else if ok {
			if t.Revision, err = parseUvarint(v); err != nil {
				continue
			}
		}
		r.tables = append(r.tables, t)
	}
	return it.Error()
}

// get returns a copy of the value of key, and whether there is one.
func (r *Reader) get(key []byte) ([]byte, bool, error) {
	v, closer, err := r.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return bytes.Clone(v), true, nil
}

// Close releases the store's directory.
func (r *Reader) Close() error {
	err := r.db.Close()
	r.lock.Close()
	r.release()
	if err != nil {
		return fmt.Errorf("persist: close %s: %w", r.dir, fromPebble(err))
	}
	return nil
}

// Dir returns the store's directory.
func (r *Reader) Dir() string { return r.dir }

// Format returns the store's format.
func (r *Reader) Format() StoreFormat { return r.format }

// Tables returns the tables of the store's catalog, sorted by name. A
// damaged catalog entry (a malformed id, schema or revision record) is
// left out; Check reports it.
func (r *Reader) Tables() []StoredTable { return slices.Clone(r.tables) }

// Table returns the table of the catalog named name. The error wraps
// ErrTableUnknown if there is none.
func (r *Reader) Table(name string) (StoredTable, error) {
	i, ok := slices.BinarySearchFunc(r.tables, name, func(t StoredTable, name string) int {
		return strings.Compare(t.Name, name)
	})
	if !ok {
		return StoredTable{}, fmt.Errorf("persist: table %q: %w", name, ErrTableUnknown)
	}
	return r.tables[i], nil
}

// Objects returns the objects of the table named name whose primary keys
// are at least lower and below upper (nil bounds: no bound), in primary
// key order, as stored: the object's key and value, each only valid until
// the loop moves on. Objects does not decode values; it splits each stored
// value into the codec version, the revision and the codec's bytes.
//
// An unknown table yields an error wrapping ErrTableUnknown. A stored value
// whose header is malformed yields an error wrapping ErrCorrupt, with the
// object's key; if the loop goes on, so does the scan. An error reading
// the store (damaged media: ErrCorrupt) ends it.
func (r *Reader) Objects(name string, lower, upper []byte) iter.Seq2[StoredRecord, error] {
	return func(yield func(StoredRecord, error) bool) {
		t, err := r.Table(name)
		if err != nil {
			yield(StoredRecord{}, err)
			return
		}
		keys := makeTableKeys(t.ID)
		opts := pebble.IterOptions{LowerBound: keys.prefix, UpperBound: keys.upper}
		if lower != nil {
			opts.LowerBound = append(bytes.Clone(keys.prefix), lower...)
		}
		if upper != nil {
			opts.UpperBound = append(bytes.Clone(keys.prefix), upper...)
		}
		if err := r.scan(&opts, func(key, v []byte) bool {
			version, rev, data, err := parseValue(v)
			if err != nil {
				return yield(StoredRecord{Key: key}, fmt.Errorf("persist: table %q: key %x: %w", name, key, err))
			}
			return yield(StoredRecord{Key: key, Version: version, Revision: rev, Value: data}, nil)
		}, len(keys.prefix)); err != nil {
			yield(StoredRecord{}, fmt.Errorf("persist: table %q: %w", name, err))
		}
	}
}

// scan calls f with the key, less its first skip bytes, and the value of
// every key in opts' bounds, until f returns false. It returns the error
// that ended the scan.
func (r *Reader) scan(opts *pebble.IterOptions, f func(key, value []byte) bool, skip int) (err error) {
	defer recoverFatal(&err)
	it, err := r.db.NewIter(opts)
	if err != nil {
		return fromPebble(err)
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return fromPebble(err)
		}
		if !f(it.Key()[skip:], v) {
			break
		}
	}
	return fromPebble(errors.Join(it.Error(), it.Close()))
}

// DiskUsage returns the space the store's files take on disk, in bytes.
func (r *Reader) DiskUsage() uint64 { return r.db.Metrics().DiskSpaceUsage() }

// TableDiskUsage estimates the space the objects of the table named name
// take on disk, in bytes (Pebble's estimate, from the table files whose
// keys overlap the table's; the log is not counted). The error wraps
// ErrTableUnknown if there is no such table.
func (r *Reader) TableDiskUsage(name string) (uint64, error) {
	t, err := r.Table(name)
	if err != nil {
		return 0, err
	}
	keys := makeTableKeys(t.ID)
	n, err := r.db.EstimateDiskUsage(keys.prefix, keys.upper)
	if err != nil {
		return 0, fmt.Errorf("persist: table %q: %w", name, fromPebble(err))
	}
	return n, nil
}
