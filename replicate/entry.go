package replicate

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
)

// EntryVersion is the version byte AppendEntry writes first in every
// entry: the layout of the entry's header and of the bodies of the kinds
// it knows. DecodeEntry refuses every other version with
// ErrUnsupportedVersion. A new kind does not change it; a change to the
// layout of an existing kind does.
const EntryVersion = 1

// MaxEntrySize is the largest entry AppendEntry produces: 1 MiB.
// AppendEntryLimit takes another limit.
//
// raft v1.7.2 sets no limit of its own, but it sends up to
// Config.MaxAppendEntries (64 by default) entries in one AppendEntries
// RPC, which NetworkTransport must write within its fixed I/O timeout
// (only InstallSnapshot's deadline grows with the size), and it keeps the
// entries in memory (the leader's in-flight pipeline, LogCache) until they
// apply. An entry of 1 MiB keeps such an RPC at 64 MiB at most, and a
// single write transaction far smaller than that is the common case. The
// limit holds for what is written: DecodeEntry accepts an entry of any
// size, since a committed entry must apply on every node whatever limit
// the node that wrote it had.
const MaxEntrySize = 1 << 20

// Kind is an entry's kind, its second byte: what its body holds. The high
// bit, KindIgnorable, is part of the kind: a kind is defined with the flag
// or without it, once and for all.
type Kind uint8

const (
	// KindChanges is an entry of one or more change sets (Entry.Changes),
	// applied in order in the entry's one transaction.
	KindChanges Kind = 1

	// KindIgnorable marks a kind that a node which does not know it may
	// skip: the entry is applied as if it were empty (the node's applied
	// index still moves to it). A kind without the flag that a node does
	// not know stops that node (ErrUnknownKind): skipping it could make
	// the node's state differ from the others'.
	KindIgnorable Kind = 0x80
)

// Ignorable reports whether k carries the KindIgnorable flag.
func (k Kind) Ignorable() bool { return k&KindIgnorable != 0 }

// known reports whether this package knows the layout of k's body.
func (k Kind) known() bool { return k == KindChanges }

// Entry is the content of one raft log entry (raft.Log.Data of a
// raft.LogCommand): write transactions' effects, never closures.
//
// An entry applies as one Strata write transaction. Its operations carry
// the revisions the proposer's transaction gave them, and every node
// writes at exactly those revisions, so revisions are the same on every
// node; the entry's raft index is the database's position once it is
// applied (docs/replication.md: revisions stay per write, the raft index
// is the position).
type Entry struct {
	// Kind is the entry's kind. AppendEntry writes KindChanges and any
	// ignorable kind; DecodeEntry returns KindChanges or an ignorable kind
	// it does not know.
	Kind Kind

	// Changes are the change sets of a KindChanges entry, at least one:
	// the applier checks each one's preconditions and applies it, or
	// skips it as a conflict, in this order, within the entry's
	// transaction, so that each sees what those before it wrote.
	Changes []ChangeSet

	// Body is the body of an ignorable kind this package does not know,
	// as it was read (DecodeEntry) or is to be written (AppendEntry). It
	// is nil for KindChanges.
	Body []byte
}

// Skip reports whether the entry's kind is one this package does not know
// and is ignorable: the applier must apply nothing for it (but still count
// it as applied).
func (e *Entry) Skip() bool { return !e.Kind.known() && e.Kind.Ignorable() }

// ChangeSetID identifies a change set so that its proposer can be told its
// outcome when the entry applies. The proposer chooses it: NewChangeSetID
// puts its node number in the high 16 bits and a sequence number in the
// low 48. The applier does not interpret it; two change sets may share an
// id (the outcome of each goes to whoever waits on it). 0 means that no
// one waits.
//
// A proposer must not reuse the ids of change sets that may still be in
// the log after it restarts: a restarted proposer starts its sequence at a
// value its predecessor did not reach (for example a random one, or the
// time in milliseconds), or its outcome could go to a waiter of the new
// process.
type ChangeSetID uint64

// NewChangeSetID returns the id of a proposer's change set: node in the
// high 16 bits, seq's low 48 bits below it. node is a number unique among
// the members of the cluster (assigned when the node joins); seq counts
// the node's proposals and wraps at 2^48.
func NewChangeSetID(node uint16, seq uint64) ChangeSetID {
	return ChangeSetID(uint64(node)<<48 | seq&(1<<48-1))
}

// Node returns the node number of id (its high 16 bits).
func (id ChangeSetID) Node() uint16 { return uint16(id >> 48) }

// Seq returns the sequence number of id (its low 48 bits).
func (id ChangeSetID) Seq() uint64 { return uint64(id) & (1<<48 - 1) }

// ChangeSet is one write transaction's effects: per table, what it wrote,
// and the preconditions under which the write still holds.
//
// The applier checks every precondition of the change set against the
// state at its turn (after the change sets before it in the entry): if all
// hold, it applies the operations of every table in order; if any fails,
// the change set is a conflict: nothing of it is applied, its proposer is
// told, and the change sets after it apply as if it were not there. The
// checks read only the replicated state, so every node decides the same.
type ChangeSet struct {
	// ID tells the proposer which of its change sets the outcome is for.
	ID ChangeSetID
	// Tables are the tables the transaction wrote or read under a
	// precondition, each once, in the order in which they apply.
	Tables []TableChanges
}

// TableChanges is a change set's part for one table.
type TableChanges struct {
	// Table is the table's name; it is never empty.
	Table string

	// ReadRevision is a precondition on the table: when not 0, the
	// table's revision must be exactly ReadRevision when the change set
	// applies, that is, nothing wrote the table since the transaction read
	// it at that revision. 0 is no precondition (a table never written,
	// whose revision is 0, can be guarded only by Reads).
	ReadRevision uint64

	// Reads are preconditions on single objects, by primary key, all of
	// which must hold when the change set applies.
	Reads []ObjectRead

	// Ops are the table's writes, applied in this order.
	Ops []Op
}

// ObjectRead is a precondition on one object: the revision of the object
// with primary key Key that the transaction read. When the change set
// applies, the object must exist with exactly that revision (nothing wrote
// or deleted it since), or, for Revision 0, must not exist.
type ObjectRead struct {
	Key      []byte
	Revision uint64
}

// OpKind is the kind of an operation, its first byte on the wire.
type OpKind uint8

// The kinds of operations: every write of the proposer's transaction, in
// the order it made them, each at the revision it took there.
const (
	// OpUpsert inserts or replaces the object with primary key Key by
	// Value, encoded by the table's codec at CodecVersion, at Revision.
	OpUpsert OpKind = 1
	// OpDelete deletes the object with primary key Key at Revision (a
	// deletion takes a revision of its own: the change log and the feeds
	// report it at that revision).
	OpDelete OpKind = 2
	// OpDeleteAll deletes every object of the table; the objects take the
	// revisions from Revision up, one each, in primary key order.
	OpDeleteAll OpKind = 3
	// OpSetRevision records the table's revision after the write.
	OpSetRevision OpKind = 4
)

// Op is one write to a table. It is one struct for every kind, rather than
// a type per kind behind an interface, so that a decoded change set holds
// its operations in one slice, without an allocation per operation. Use
// Upsert, Delete, DeleteAll and SetRevision to build one; the fields a
// kind does not use are zero.
type Op struct {
	Kind OpKind
	// CodecVersion is the version of the table's codec that encoded Value
	// (persist.Codec.Version, a uint32), for OpUpsert.
	CodecVersion uint32
	// Key is the object's primary key (OpUpsert, OpDelete).
	Key []byte
	// Revision is the revision the write took in the proposer's
	// transaction: for OpUpsert the object's, for OpDelete the
	// deletion's, for OpDeleteAll the first deletion's, for
	// OpSetRevision the table's after the transaction. The applier writes
	// at exactly these revisions, so that every node has the same ones.
	Revision uint64
	// Value is the encoded object, for OpUpsert. nil and empty are the
	// same value.
	Value []byte
}

// Upsert returns the operation that inserts or replaces the object key by
// value, encoded at codec version codecVersion, with revision rev.
func Upsert(key []byte, rev uint64, codecVersion uint32, value []byte) Op {
	return Op{Kind: OpUpsert, Key: key, Revision: rev, CodecVersion: codecVersion, Value: value}
}

// Delete returns the operation that deletes the object key at revision
// rev.
func Delete(key []byte, rev uint64) Op { return Op{Kind: OpDelete, Key: key, Revision: rev} }

// DeleteAll returns the operation that deletes every object of the table,
// at the revisions from rev up.
func DeleteAll(rev uint64) Op { return Op{Kind: OpDeleteAll, Revision: rev} }

// SetRevision returns the operation that records the table's revision rev.
func SetRevision(rev uint64) Op { return Op{Kind: OpSetRevision, Revision: rev} }

// The smallest encodings, which bound what a count may claim before
// anything is allocated for it: a change set is its id and a table count;
// a table its name (at least one byte and its length), its revision and
// two counts; a read a key length and a revision; an op its kind and a
// revision.
const (
	minChangeSet = 8 + 1
	minTable     = 2 + 1 + 1 + 1
	minRead      = 1 + 1
	minOp        = 1 + 1
)

// Size returns the number of bytes AppendEntry writes for e (for a valid
// e): 2, the change sets' count as a uvarint, and each change set's Size.
// A leader that combines change sets into one entry can add their sizes
// to stay under a limit.
func (e *Entry) Size() int {
	if !e.Kind.known() {
		return 2 + len(e.Body)
	}
	n := 2 + uvarintLen(uint64(len(e.Changes)))
	for i := range e.Changes {
		n += e.Changes[i].Size()
	}
	return n
}

// Size returns the number of bytes cs takes in an entry.
func (cs *ChangeSet) Size() int {
	n := 8 + uvarintLen(uint64(len(cs.Tables)))
	for i := range cs.Tables {
		t := &cs.Tables[i]
		n += bytesLen(len(t.Table)) + uvarintLen(t.ReadRevision)
		n += uvarintLen(uint64(len(t.Reads)))
		for _, r := range t.Reads {
			n += bytesLen(len(r.Key)) + uvarintLen(r.Revision)
		}
		n += uvarintLen(uint64(len(t.Ops)))
		for j := range t.Ops {
			op := &t.Ops[j]
			n++
			switch op.Kind {
			case OpUpsert:
				n += bytesLen(len(op.Key)) + uvarintLen(op.Revision) +
					uvarintLen(uint64(op.CodecVersion)) + bytesLen(len(op.Value))
			case OpDelete:
				n += bytesLen(len(op.Key)) + uvarintLen(op.Revision)
			case OpDeleteAll, OpSetRevision:
				n += uvarintLen(op.Revision)
			}
		}
	}
	return n
}

// AppendEntry appends the encoding of e to dst and returns the extended
// buffer. It refuses, with dst unchanged, an entry larger than
// MaxEntrySize (an *EntryTooLargeError, which matches ErrEntryTooLarge),
// a kind it does not know without the ignorable flag (ErrUnknownKind),
// and an entry that breaks the rules of the format (ErrInvalidEntry): no
// change set, an empty table name, an unknown operation kind, fields an
// operation does not use set, or a Body on a KindChanges entry.
func AppendEntry(dst []byte, e *Entry) ([]byte, error) {
	return AppendEntryLimit(dst, e, MaxEntrySize)
}

// AppendEntryLimit is AppendEntry with limit, in bytes, in place of
// MaxEntrySize.
func AppendEntryLimit(dst []byte, e *Entry, limit int) ([]byte, error) {
	if err := e.validate(); err != nil {
		return dst, err
	}
	size := e.Size()
	if size > limit {
		return dst, &EntryTooLargeError{Size: size, Limit: limit}
	}
	if cap(dst)-len(dst) < size {
		grown := make([]byte, len(dst), len(dst)+size)
		copy(grown, dst)
		dst = grown
	}
	dst = append(dst, EntryVersion, byte(e.Kind))
	if !e.Kind.known() {
		return append(dst, e.Body...), nil
	}
	dst = binary.AppendUvarint(dst, uint64(len(e.Changes)))
	for i := range e.Changes {
		dst = appendChangeSet(dst, &e.Changes[i])
	}
	return dst, nil
}

// validate checks what AppendEntry cannot write.
func (e *Entry) validate() error {
	if !e.Kind.known() {
		if !e.Kind.Ignorable() {
			return fmt.Errorf("replicate: encode kind %#x: %w", uint8(e.Kind), ErrUnknownKind)
		}
		if e.Changes != nil {
			return fmt.Errorf("%w: change sets in an entry of kind %#x", ErrInvalidEntry, uint8(e.Kind))
		}
		return nil
	}
	if e.Body != nil {
		return fmt.Errorf("%w: a body in a KindChanges entry", ErrInvalidEntry)
	}
	if len(e.Changes) == 0 {
		return fmt.Errorf("%w: no change set", ErrInvalidEntry)
	}
	for i := range e.Changes {
		for j := range e.Changes[i].Tables {
			t := &e.Changes[i].Tables[j]
			if t.Table == "" {
				return fmt.Errorf("%w: change set %d: empty table name", ErrInvalidEntry, i)
			}
			for k := range t.Ops {
				if err := t.Ops[k].validate(); err != nil {
					return fmt.Errorf("%w: change set %d, table %q, op %d: %s", ErrInvalidEntry, i, t.Table, k, err)
				}
			}
		}
	}
	return nil
}

// validate checks that op is of a known kind and sets only its fields, so
// that it reads back as it is.
func (op *Op) validate() error {
	var key, rev bool
	switch op.Kind {
	case OpUpsert:
		return nil
	case OpDelete:
		key, rev = true, true
	case OpDeleteAll, OpSetRevision:
		rev = true
	default:
		return fmt.Errorf("unknown op kind %d", op.Kind)
	}
	if (!key && op.Key != nil) || (!rev && op.Revision != 0) || op.Value != nil || op.CodecVersion != 0 {
		return fmt.Errorf("op kind %d with fields it does not use", op.Kind)
	}
	return nil
}

func appendChangeSet(b []byte, cs *ChangeSet) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(cs.ID))
	b = binary.AppendUvarint(b, uint64(len(cs.Tables)))
	for i := range cs.Tables {
		t := &cs.Tables[i]
		b = binary.AppendUvarint(b, uint64(len(t.Table)))
		b = append(b, t.Table...)
		b = binary.AppendUvarint(b, t.ReadRevision)
		b = binary.AppendUvarint(b, uint64(len(t.Reads)))
		for _, r := range t.Reads {
			b = appendLenBytes(b, r.Key)
			b = binary.AppendUvarint(b, r.Revision)
		}
		b = binary.AppendUvarint(b, uint64(len(t.Ops)))
		for j := range t.Ops {
			op := &t.Ops[j]
			b = append(b, byte(op.Kind))
			switch op.Kind {
			case OpUpsert:
				b = appendLenBytes(b, op.Key)
				b = binary.AppendUvarint(b, op.Revision)
				b = binary.AppendUvarint(b, uint64(op.CodecVersion))
				b = appendLenBytes(b, op.Value)
			case OpDelete:
				b = appendLenBytes(b, op.Key)
				b = binary.AppendUvarint(b, op.Revision)
			case OpDeleteAll, OpSetRevision:
				b = binary.AppendUvarint(b, op.Revision)
			}
		}
	}
	return b
}

func appendLenBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

// uvarintLen returns the length of x as a uvarint.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// bytesLen returns the length of n bytes with their length.
func bytesLen(n int) int { return uvarintLen(uint64(n)) + n }

// DecodeEntry decodes the entry data holds, whole. Its byte slices (keys,
// values, an unknown kind's Body) alias data, without a copy: data must
// not change while they are in use, and whatever keeps them longer than
// the entry (a codec's decoded object) must copy them. raft never changes
// a log's Data once it is appended, and persist's codecs copy what they
// keep. Table names are strings of their own.
//
// It never panics, and allocates in proportion to len(data), whatever a
// length or count claims: each is checked against what is left of data
// first, and the most an input byte can cost is the 64 bytes of an Op
// (an entry of OpDeleteAll operations, one byte each). Every failure is a *DecodeError with the
// offset of the field in data; the error matches ErrUnsupportedVersion
// for a version other than EntryVersion, and ErrUnknownKind for a kind
// this package does not know without the ignorable flag. Bytes after the
// entry are refused, as are uvarints not written in their shortest form,
// so that an entry that decodes has one encoding: AppendEntry of the
// result gives data back.
//
// An entry that does not decode must stop the node that applies it: raft
// cannot refuse a committed entry, and a node that skipped one would
// differ from the others from then on. An ignorable kind this package
// does not know decodes to an Entry whose Skip is true.
func DecodeEntry(data []byte) (*Entry, error) {
	e := new(Entry)
	if err := DecodeEntryInto(e, data); err != nil {
		return nil, err
	}
	return e, nil
}

// DecodeEntryInto is DecodeEntry into e, which it overwrites; it reuses
// the capacity of e.Changes. On an error, e holds nothing of use.
func DecodeEntryInto(e *Entry, data []byte) error {
	d := decoder{data: data}
	if len(data) < 1 {
		return d.fail("entry version: no byte")
	}
	if data[0] != EntryVersion {
		return &DecodeError{Offset: 0, What: fmt.Sprintf("entry version %d", data[0]), Err: ErrUnsupportedVersion}
	}
	if len(data) < 2 {
		d.off = 1
		return d.fail("entry kind: no byte")
	}
	kind := Kind(data[1])
	d.off = 2
	changes := e.Changes[:0]
	*e = Entry{Kind: kind}
	if !kind.known() {
		if !kind.Ignorable() {
			return &DecodeError{Offset: 1, What: fmt.Sprintf("entry kind %#x", data[1]), Err: ErrUnknownKind}
		}
		e.Body = data[2:len(data):len(data)]
		return nil
	}
	n, err := d.count("change set count", minChangeSet)
	if err != nil {
		return err
	}
	if n == 0 {
		d.off = 2
		return d.fail("no change set")
	}
	if cap(changes) < n {
		changes = make([]ChangeSet, n)
	}
	changes = changes[:n]
	for i := range changes {
		if err := d.changeSet(&changes[i]); err != nil {
			return err
		}
	}
	if d.off != len(data) {
		return d.fail(fmt.Sprintf("%d bytes after the entry", len(data)-d.off))
	}
	e.Changes = changes
	return nil
}

// decoder reads an entry from data, from off on.
type decoder struct {
	data []byte
	off  int
}

func (d *decoder) fail(what string) error { return &DecodeError{Offset: d.off, What: what} }

// uvarint reads a uvarint written in its shortest form.
func (d *decoder) uvarint(what string) (uint64, error) {
	x, n := binary.Uvarint(d.data[d.off:])
	if n <= 0 {
		if n == 0 {
			return 0, d.fail(what + ": truncated")
		}
		return 0, d.fail(what + ": overflows 64 bits")
	}
	if n > 1 && d.data[d.off+n-1] == 0 {
		return 0, d.fail(what + ": not in its shortest form")
	}
	d.off += n
	return x, nil
}

// count reads a count of items each at least min bytes long, and refuses
// one that what is left of the input cannot hold.
func (d *decoder) count(what string, min int) (int, error) {
	start := d.off
	x, err := d.uvarint(what)
	if err != nil {
		return 0, err
	}
	if left := len(d.data) - d.off; x > uint64(left)/uint64(min) {
		d.off = start
		return 0, d.fail(fmt.Sprintf("%s %d: more than the %d bytes left hold", what, x, left))
	}
	return int(x), nil
}

// bytes reads a length and that many bytes, which alias the input; a
// length of 0 reads as nil.
func (d *decoder) bytes(what string) ([]byte, error) {
	start := d.off
	n, err := d.uvarint(what + " length")
	if err != nil {
		return nil, err
	}
	if left := len(d.data) - d.off; n > uint64(left) {
		d.off = start
		return nil, d.fail(fmt.Sprintf("%s length %d: more than the %d bytes left", what, n, left))
	}
	if n == 0 {
		return nil, nil
	}
	p := d.data[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return p, nil
}

func (d *decoder) changeSet(cs *ChangeSet) error {
	if len(d.data)-d.off < 8 {
		return d.fail("change set id: truncated")
	}
	cs.ID = ChangeSetID(binary.BigEndian.Uint64(d.data[d.off:]))
	d.off += 8
	n, err := d.count("table count", minTable)
	if err != nil {
		return err
	}
	cs.Tables = nil
	if n == 0 {
		return nil
	}
	cs.Tables = make([]TableChanges, n)
	for i := range cs.Tables {
		if err := d.table(&cs.Tables[i]); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) table(t *TableChanges) error {
	start := d.off
	name, err := d.bytes("table name")
	if err != nil {
		return err
	}
	if len(name) == 0 {
		d.off = start
		return d.fail("empty table name")
	}
	t.Table = string(name)
	if t.ReadRevision, err = d.uvarint("table read revision"); err != nil {
		return err
	}
	n, err := d.count("read count", minRead)
	if err != nil {
		return err
	}
	if n > 0 {
		t.Reads = make([]ObjectRead, n)
		for i := range t.Reads {
			r := &t.Reads[i]
			if r.Key, err = d.bytes("read key"); err != nil {
				return err
			}
			if r.Revision, err = d.uvarint("read revision"); err != nil {
				return err
			}
		}
	}
	if n, err = d.count("op count", minOp); err != nil {
		return err
	}
	if n > 0 {
		t.Ops = make([]Op, n)
		for i := range t.Ops {
			if err := d.op(&t.Ops[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *decoder) op(op *Op) error {
	if d.off >= len(d.data) {
		return d.fail("op kind: truncated")
	}
	op.Kind = OpKind(d.data[d.off])
	var err error
	switch op.Kind {
	case OpUpsert:
		d.off++
		if op.Key, err = d.bytes("upsert key"); err != nil {
			return err
		}
		if op.Revision, err = d.uvarint("upsert revision"); err != nil {
			return err
		}
		start := d.off
		v, err := d.uvarint("upsert codec version")
		if err != nil {
			return err
		}
		if v > math.MaxUint32 {
			d.off = start
			return d.fail(fmt.Sprintf("upsert codec version %d: more than 32 bits", v))
		}
		op.CodecVersion = uint32(v)
		op.Value, err = d.bytes("upsert value")
		return err
	case OpDelete:
		d.off++
		if op.Key, err = d.bytes("delete key"); err != nil {
			return err
		}
		op.Revision, err = d.uvarint("delete revision")
		return err
	case OpDeleteAll:
		d.off++
		op.Revision, err = d.uvarint("first delete revision")
		return err
	case OpSetRevision:
		d.off++
		op.Revision, err = d.uvarint("table revision")
		return err
	default:
		return d.fail(fmt.Sprintf("unknown op kind %d", op.Kind))
	}
}
