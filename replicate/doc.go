// Package replicate is the beginning of Strata's replication: one Strata
// state shared by several servers through hashicorp/raft (v1.7.2): raft's
// storage (LogStore, raft's log store and stable store on one Pebble DB,
// github.com/cockroachdb/pebble/v2), the format of the entries it holds
// (Entry), and the state machine (Node): tables bound with their codecs
// (Bind) whose commits on the leader are proposed through raft and applied
// on every node at the same revisions (docs/replication.md).
//
// It is a module of its own, so that programs that do not replicate never
// build, download or link raft.
//
// # Status
//
// Works (node.go, journal.go, fsm.go, binding.go; node_test.go):
//
//   - Bound tables are attached to the node's journal. A commit of them on
//     the leader (Node.Write, or an ordinary WriteTxn.Commit) is proposed:
//     its tables unlock once the change set is queued (early lock
//     release), one proposer goroutine submits entries in queue order,
//     pipelined (up to Config.MaxInFlight in flight), combining the change
//     sets queued meanwhile into one entry (at most MaxEntrySize; a larger
//     change set fails its commit with ErrEntryTooLarge). Commit returns
//     once the entry is applied on the leader; Node.Write returns its
//     index.
//   - Every node applies every entry at the revisions the leader gave the
//     writes, after the change sets' preconditions (a stale one is
//     skipped, on every node, as a conflict): objects, revisions, the
//     revision index and change feeds are the same on every node at the
//     same applied index.
//   - Errors: *NotLeaderError (not proposed; names the leader), an
//     *AmbiguousError after submission (leadership lost, shut down,
//     overtaken: never reported as failed), ErrNotReady (not proposed;
//     Node.Write retries it), ErrShutdown, a *StoppedError.
//   - An entry that does not decode, names a table not bound, or whose
//     apply cannot commit stops the node (Node.Stopped).
//   - A stalled disk (diskstall.go; TestFaultProgress/leader-disk-stalled
//     and leader-store-stalled): a node whose log store has not finished
//     a write, or whose durable store has not finished the commit of an
//     applied entry, within Config.DiskStallTimeout stops sending raft's heartbeats, so that
//     its followers elect another leader, and refuses new writes with
//     ErrNotReady; a Write whose ctx ends while its commit waits on the
//     stalled disk returns an *AmbiguousError.
//   - AppliedIndex and WaitApplied; PublishedIndex, which moves only once
//     the database published the entries (the node's own commits once
//     settled, strata.SettledBatch).
//   - Read modes (read.go; read_test.go): stale (ReadTxn, with
//     MaxStaleness refused as *StaleError on a follower out of touch),
//     at least index N (ReadAtLeast, on PublishedIndex), linearizable
//     (ReadLinearizable: on the leader the ReadTxn, then a VerifyLeader
//     round shared by concurrent reads; on a follower the leader's
//     ReadIndex through Config.LeaderIndex or the Config.Forwarder, then
//     ReadAtLeast).
//   - Writes from any node (forward.go, forward_net.go;
//     forward_test.go): Node.Write on a follower runs fn there and
//     forwards its change set to the leader (Config.Forwarder:
//     LocalForwarder in-process, NetForwarder to a ForwardServer over
//     HTTP), which commits it as its own transaction if its
//     preconditions hold on its tip (ErrConflict otherwise; with
//     ObjectConflicts, per object written rather than per table);
//     Write returns the index once this node published it. A plain
//     WriteTxn.Commit on a follower still fails with *NotLeaderError.
//   - Commit notices (notice.go; notice_test.go): a follower waiting for
//     an entry the leader committed (a forwarded Write, a linearizable
//     read, ReadAtLeast) learns the commit at once, not raft's
//     CommitTimeout later: the leader appends a barrier, on its own or
//     at the follower's request (Forwarder.NoticeCommit,
//     Node.AnnounceCommit).
//   - Membership and leadership (membership.go, health.go; membership_test.go):
//     Bootstrap, AddVoter, AddNonvoter (read replicas), RemoveServer,
//     TransferLeadership, with bad input refused by typed errors before
//     raft sees it; Members (the configuration, the node's state and
//     indexes, and what the leader knows of each follower's heartbeats:
//     raft v1.7.2 exposes no more); Leading, a leadership watch any
//     number of callers share, true only once the node is ready in its
//     term; RunWhileLeader, a leader-only job on one node at a time within
//     the bound of raft's leader lease (its doc says which); Shutdown,
//     which hands the leadership over before closing; Health for probes.
//   - Raft snapshots (snapshot.go; snapshot_test.go; "Snapshots" below):
//     raft compacts the log behind them, installs them on nodes that fell
//     behind its first entry, and restores the latest when a node starts.
//   - Real processes (example/cluster, a node per process on raft's TCP
//     transport, with demo.sh; process_test.go): three processes on
//     loopback, the leader killed with SIGKILL mid-write and a follower
//     killed while it installs a snapshot, restarted from their data
//     directories; failover figures in BENCH.md.
//   - A member on the network in one call (server.go; server_test.go):
//     StartServer opens the log store and raft's file snapshot store in a
//     directory, raft's TCP transport (NewTCPTransport, whose stream layer
//     closes the connections it accepted), the forward server and a
//     NetForwarder, and bootstraps the cluster from its peers on a first
//     start (or alone, or not at all for a member that joins later);
//     Server.Close hands the leadership over and closes it all.
//     Node.WaitLeader waits for the cluster's first election.
//     example/server is the smallest complete program, and the hive cell
//     (stratahive/replicated) runs its node through StartServer too.
//   - Durable nodes (durable.go): with Config.Store (ServerConfig.Durable)
//     the bound tables live in a persist store too, loaded by NewNode
//     (persist.Store.LoadApplied); every entry the FSM applies is written
//     to it with its index in one unsynced batch, the raft log being the
//     write-ahead log. A restart loads the store and replays only the log
//     after its index; it restores raft's latest snapshot only if that is
//     newer than the store (raft's own restore at start is turned off),
//     and refuses a store ahead of the log (ErrStoreAhead). Without a
//     store, a node restarts on an empty in-memory database, restores the
//     latest snapshot and applies the log after it.
//
// Not yet:
//
//   - The index published with the root (docs/replication.md, root hook
//     2): a ReadTxn does not say which index it holds (PublishedIndex
//     read before it is a lower bound).
//   - raft.Restore of a snapshot older than the node's state: the FSM
//     refuses it (strata.Replace cannot take the tables back), and raft
//     v1.7.2 panics when the FSM refuses a user restore.
//   - Conflicts are reported in the FSM's ApplyResult only: no commit
//     waits for a change set that can conflict until writes come from
//     followers.
//   - Transactions that write bound and unbound tables are not refused.
//
// # Use of the log store
//
//	store, err := replicate.Open(dir, replicate.Options{})
//	r, err := raft.NewRaft(conf, fsm, store, store, snapshots, transport)
//	...
//	err = r.Shutdown().Error()
//	err = store.Close()
//
// raft's LogCache may sit in front of the store as its log store; it
// passes IsMonotonic through.
//
// # Format
//
// One Pebble DB per store, with three kinds of keys: "f", the format of the
// store (1; a newer one is refused with ErrUnknownFormat); "l" and the
// index as 8 big-endian bytes, one per log entry, so that keys sort as
// indexes do; "s" and raft's key, one per stable value (the current term,
// the vote).
//
// A log entry's value is a versioned record of the whole raft.Log: a
// version byte, the index (which must be the key's), the term, the type,
// AppendedAt as seconds and nanoseconds, Data and Extensions with their
// lengths (nil and empty kept apart), and a CRC-32C of all of it. A stable
// value is a version byte, the value and its CRC-32C. A record that fails
// its checksum, does not decode whole, or holds another index than its
// key is a *CorruptLogError (*CorruptStableError) naming the entry (the
// key): never an entry that might be wrong. Both match ErrCorrupt.
//
// # Durability
//
// Every write commits one Pebble batch with pebble.Sync: when StoreLogs,
// DeleteRange, Set or SetUint64 returns nil, the write is in Pebble's
// write-ahead log and fsynced, and survives a crash of the process or of
// the machine. One StoreLogs call is one batch: a crash leaves all of its
// entries or none, never a part; the same holds for a DeleteRange, and for
// a StoreLogs that replaces a suffix (the deletion and the new entries are
// one batch).
//
// The log is always one contiguous run of indexes, FirstIndex..LastIndex
// (0 and 0 when empty). StoreLogs keeps the entries below its first index
// only when they reach it, and replaces whatever was stored from its first
// index on; DeleteRange deletes the log's head or its tail and refuses to
// cut a hole (ErrNotContiguous). raft appends at the end, deletes a
// conflicting tail before it writes the leader's entries, and deletes the
// head after a snapshot, so it never meets either refusal. Because the log
// cannot have a gap, the store is a raft.MonotonicLogStore: after
// restoring or installing a snapshot, raft deletes the whole old log (one
// range deletion) rather than keep it below a gap.
//
// FirstIndex and LastIndex are kept in memory, found by seeking on Open
// and maintained by every write; reads of entries go to Pebble.
//
// # Crashes
//
// Pebble replays its write-ahead log on Open and drops a batch whose
// write the crash tore: a batch that was not synced, so no write that
// returned is lost. Since every batch leaves the log contiguous, the log
// after a crash is contiguous too, and Open only checks that its first and
// last entries decode (Options.VerifyOnOpen reads every entry and checks
// that none is missing). A store that fails the checks is refused with a
// *CorruptLogError; it is never repaired by cutting the log at its last
// whole entry. What is stored was acknowledged to raft, and a node that
// forgot an entry it acknowledged could let a committed entry be lost: a
// damaged node must be wiped and rejoin the cluster, which raft then
// brings up to date with a snapshot.
//
// The tests kill a process writing to a store with SIGKILL, and take crash
// clones of Pebble's crashable in-memory file system, at random moments:
// the log they find is always the one every acknowledged write left, or
// the one the write in flight would have left.
//
// # Entries
//
// A raft log entry of Strata's (the Data of a raft.LogCommand) carries
// write transactions' effects, never closures: an Entry, encoded by
// AppendEntry and decoded by DecodeEntry (entry.go): every write of the
// proposer's transaction, in order, at the revision it took there. It
// applies on every node as one Strata write transaction that writes at
// exactly those revisions, so that revisions are the same everywhere; the
// entry's raft index is the database's position once it is applied
// (docs/replication.md). Byte by byte:
//
//	version    1 byte   EntryVersion (1); another is ErrUnsupportedVersion
//	kind       1 byte   KindChanges (1); the high bit is KindIgnorable
//	body                per kind; for KindChanges:
//	  count    uvarint  change sets, at least 1; then each change set:
//	  id       8 bytes  big-endian ChangeSetID (node << 48 | sequence)
//	  tables   uvarint  then each table:
//	    name   uvarint  length, at least 1; then the name's bytes
//	    read   uvarint  the table revision read (0: no precondition)
//	    reads  uvarint  then each: key (uvarint length, bytes), revision
//	                    (uvarint; 0: the object must not exist)
//	    ops    uvarint  then each: 1 byte of OpKind, and its fields:
//	                    1 upsert: key (length, bytes), revision, codec
//	                      version (uvarints), value (length, bytes)
//	                    2 delete: key (length, bytes), revision
//	                    3 delete all: the first deletion's revision
//	                    4 set revision: the table's revision
//
// A uvarint is encoding/binary's, in its shortest form. An entry decodes
// only whole: nothing may follow it, a length or count may not claim more
// than the rest of the entry holds (so a damaged one allocates nothing),
// and every field has one encoding, so that AppendEntry of what
// DecodeEntry returns gives the same bytes. Decoded keys and values alias
// the entry's bytes: in the benchmarks (one change set of 100 objects of
// 100 bytes), copying the entry first took the decode from 7.5 to 13.5
// µs, and copying each key and value to 30 µs and 206 allocations.
//
// Within a KindChanges entry the change sets apply in order, each after
// its preconditions are checked against the state the ones before it
// left: the table's revision must equal the one read (when not 0), and
// each object read must exist with the revision read (or not exist, for
// revision 0). A change set whose precondition fails is a conflict: none
// of it applies, its proposer is told by its id, and the others apply.
// The operations are written at the revisions they carry, which must
// grow within a table: a change set whose revisions do not is refused by
// the applier as a conflict would be, on every node alike.
//
// An entry that does not decode (a *DecodeError: a newer version, a kind
// this node does not know without the ignorable flag, damage) must stop
// the node: raft cannot refuse a committed entry, and a node that skipped
// one would silently differ from the others. A new kind is rolled out
// with the ignorable flag when older nodes may apply nothing for it
// (Entry.Skip), and without it, after every node is upgraded, when they
// may not. AppendEntry refuses an entry above MaxEntrySize (1 MiB) with
// ErrEntryTooLarge; DecodeEntry has no limit.
//
// # Snapshots
//
// The FSM's Snapshot is a ReadTxn of the bound tables with the node's
// AppliedIndex (free: a ReadTxn holds its state while writers go on); the
// snapshot's Persist, on raft's snapshot goroutine, writes it:
//
//	magic     8 bytes   "STRATARS"
//	version   4 bytes   big-endian SnapshotVersion (1); another is refused
//	index     8 bytes   big-endian: the applied index the tables hold
//	checksum  4 bytes   big-endian CRC-32C of the 20 bytes before it
//	tables              persist.WriteSnapshot of every bound table, in
//	                    name order: blocks with checksums, a footer with
//	                    the counts and a checksum of the whole
//
// raft calls Snapshot on its FSM goroutine, between two Applies. On the
// leader, the node's own commits of entries already applied are published
// by their writers a moment after the FSM marks them applied, so Snapshot
// takes the ReadTxn once PublishedIndex reached AppliedIndex: the ReadTxn
// then holds exactly the state at the index recorded, since nothing later
// is applied until Snapshot returns. Every node's tables at the same
// applied index give the same persist.WriteSnapshot bytes
// (TestSnapshotInstall checks it).
//
// The FSM's Restore reads the snapshot whole, verifying every checksum and
// decoding every object, before it touches anything: a damaged snapshot is
// a *SnapshotError (ErrSnapshotRefused) matching
// persist.ErrCorruptSnapshot, and changes nothing. Then it fails the
// node's pending commits, as the apply of an entry it did not propose
// does, waits until the database settled them, and replaces every bound
// table in one write transaction (strata.Replace): each holds exactly the
// snapshot's objects, at their revisions, with the snapshot's table
// revision; every watch channel of the old state closes; change feeds
// deliver the writes that lead from the old state to the new (deletions
// of the objects gone, the objects new or changed). The node's applied
// and published indexes become the snapshot's index, and WaitApplied's
// waiters wake. strata.Replace refuses a state that cannot follow the
// tables' (ErrWriteOrder): a snapshot older than what the node applied,
// which raft never installs, is refused.
//
// # Stable store and raft
//
// Get and GetUint64 of a key never set return ErrKeyNotFound, whose text
// is exactly "not found": raft v1.7.2 compares the error's text with
// "not found" to tell a missing current term or vote from a failure
// (api.go:470, api.go:511, raft.go:1687, raft.go:1692), as its own
// InmemStore's Get returns.
package replicate
