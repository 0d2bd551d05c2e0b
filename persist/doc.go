// Package persist makes Strata tables durable on Pebble
// (github.com/cockroachdb/pebble/v2), and writes and reads point-in-time
// snapshots of tables to single checksummed files.
//
// It is a module of its own, so that programs that keep Strata in memory
// only never build, download or link Pebble.
//
// # Durable tables
//
// Open a Store on a directory, then Register each table that should
// survive restarts with a codec for its objects:
//
//	store, err := persist.Open(dir, persist.Options{})
//	defer store.Close()
//	err = store.Register(persist.Table(nodes, persist.Binary[Node]()))
//
// Table binds a table to the codec of its objects; the binding serves the
// store and snapshots alike. Store.Register loads what the table held when
// the store was last used (secondary indexes are rebuilt in memory,
// revisions go on above the stored ones) and attaches the table to the
// store: from then on every commit that changes it writes its changes, as
// one Pebble batch with the commit's other persisted tables, before the
// commit becomes visible. A write that fails fails the commit and changes
// nothing. Reads never touch Pebble.
//
// # What a store refuses
//
// A store loads only what it can load correctly, and says why not with a
// typed error that names the table:
//
//   - a table stored with another codec or object type: ErrSchemaMismatch
//     (stored vs bound), unless the codec's version went up so that it
//     migrates the old values (Versioned); TypeName keeps a renamed type's
//     identity;
//   - objects whose primary key changed with the primary index:
//     ErrKeyChanged, unless the binding has Rekey, which rewrites the keys
//     in one atomic batch;
//   - writes to a table whose registration is loading or failed:
//     ErrNotLoaded, wrapping the registration's error; such a table reads
//     as not initialized, and Store.LoadError says why;
//   - a table written to before it was registered: strata.ErrTableNotEmpty;
//     empty it (commits that only delete go through) and register again;
//   - a second Open of the store, through any path: ErrLocked;
//   - damaged media: ErrCorrupt.
//
// Tables the store holds that nobody registered (Store.Unregistered) can be
// dropped or renamed (Store.Drop, Store.Rename); a table whose registration
// was refused holds its name, and is neither.
//
// Options.Sync chooses what Commit waits for: Sync{} (the default) returns
// after the record is fsynced, and concurrent commits share syncs;
// Buffered{Interval} returns at once and syncs every Interval, so a crash,
// even of the process alone, can lose the commits of the last Interval
// plus the time the log syncs around the crash take (never part of a
// commit).
//
// Codecs: Binary for types that implement encoding.BinaryAppender and
// encoding.BinaryUnmarshaler, JSON, StrictJSON (JSON that refuses unknown
// fields), Funcs for encodings of your own, and Versioned for an encoding
// that changed: every value records the codec version that wrote it, old
// versions are migrated when loaded, and values of an unknown, newer version
// are refused with ErrUnknownVersion.
//
// # Tables a log applies
//
// A replicated state machine (package replicate's Node) keeps its tables in
// a store otherwise: Store.LoadApplied loads them without attaching them,
// and the node writes the changes of each log entry it applies through the
// returned Applied, with the entry's index as the store's position, in one
// unsynced batch (the log is the write-ahead log). A restart loads the
// tables at that position and replays the log after it. Register refuses
// such a table (ErrAppliedTable), and LoadApplied one written by commits of
// its own.
//
// # Snapshots
//
// WriteSnapshot writes the tables of one ReadTxn (a consistent point in
// time, taken while writers go on) to a single file with a versioned
// header, per-block CRC-32C checksums and a footer with counts and a
// checksum of the whole file; ReadSnapshot verifies it and restores it into
// empty tables in one transaction, or changes nothing. WriteSnapshotFile
// writes to a temporary name, fsyncs, renames and fsyncs the directory, so a
// crash never leaves a file that loads. Snapshots work for databases that
// are not persisted as well.
//
// # Tools
//
// Tools that do not know the tables' Go types (the strata command) read a
// store with OpenReader, which opens it read-only under the store's lock:
// the catalog and each table's schema (Reader.Tables), the objects as
// stored (Reader.Objects), consistency checks (Reader.Check,
// Reader.CheckLSM) and a snapshot written from the stored records
// (Reader.WriteSnapshot). SnapshotReader reads a snapshot's records
// without decoding them, verifying the file as it goes. TableSchema tells
// what a binding records, to compare with what is stored.
package persist
