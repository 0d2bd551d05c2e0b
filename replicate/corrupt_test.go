package replicate

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/hashicorp/raft"
)

// The corruption tests damage records by writing through the store's
// Pebble DB directly, then read them through the store: every damaged
// record is a typed error naming its index, never an entry.

// wantCorrupt fails the test unless err is a *CorruptLogError for index.
func wantCorrupt(t *testing.T, err error, index uint64, what string) {
	t.Helper()
	var ce *CorruptLogError
	if !errors.As(err, &ce) || ce.Index != index || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: %v, want a *CorruptLogError for entry %d", what, err, index)
	}
}

// TestCorruptRecord flips each byte of a stored record in turn, and cuts
// it short at every length: GetLog must refuse every version.
func TestCorruptRecord(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil, t.TempDir())
	defer closeStore(t, st)
	must(t, st.StoreLogs(entries(1, 10, 3)))
	key := logKey(5)
	rec := appendRecord(nil, entryFor(5, 3))
	for i := range rec {
		for _, flip := range []byte{0x01, 0x80, 0xff} {
			bad := append([]byte{}, rec...)
			bad[i] ^= flip
			must(t, st.db.Set(key, bad, pebble.Sync))
			var l raft.Log
			wantCorrupt(t, st.GetLog(5, &l), 5, "a flipped byte")
			if l.Index != 0 || l.Data != nil {
				t.Fatalf("GetLog of a corrupt record filled the entry: %+v", l)
			}
		}
	}
	for n := range len(rec) {
		must(t, st.db.Set(key, rec[:n], pebble.Sync))
		var l raft.Log
		wantCorrupt(t, st.GetLog(5, &l), 5, "a short record")
	}
	must(t, st.db.Set(key, append(append([]byte{}, rec...), 0), pebble.Sync))
	var l raft.Log
	wantCorrupt(t, st.GetLog(5, &l), 5, "a record with a trailing byte")

	// A whole record of another entry, under this one's key.
	must(t, st.db.Set(key, appendRecord(nil, entryFor(6, 3)), pebble.Sync))
	wantCorrupt(t, st.GetLog(5, &l), 5, "another index's record")

	// A newer version, with a checksum that matches.
	body := appendRecord(nil, entryFor(5, 3))
	body = body[:len(body)-crcSize]
	body[0] = recordVersion + 1
	newer := binary.BigEndian.AppendUint32(body, crc32.Checksum(body, castagnoli))
	must(t, st.db.Set(key, newer, pebble.Sync))
	wantCorrupt(t, st.GetLog(5, &l), 5, "a newer record version")

	// The neighbours are untouched.
	must(t, st.GetLog(4, &l))
	must(t, st.GetLog(6, &l))
}

// TestCorruptOnOpen: damage at the log's first or last entry, or a hole
// inside it, is refused by Open; damage inside the log only by Open with
// VerifyOnOpen, and otherwise by GetLog of the entry.
func TestCorruptOnOpen(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		index     uint64 // the entry damaged
		hole      bool   // deleted rather than flipped
		cheapSees bool   // Open without VerifyOnOpen refuses the store
	}{
		{"first", 1, false, true},
		{"last", 20, false, true},
		{"inside", 7, false, false},
		{"hole inside", 7, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			st := openStore(t, nil, dir)
			must(t, st.StoreLogs(entries(1, 20, 1)))
			if tc.hole {
				must(t, st.db.Delete(logKey(tc.index), pebble.Sync))
			} else {
				rec := appendRecord(nil, entryFor(tc.index, 1))
				rec[len(rec)/2] ^= 0x10
				must(t, st.db.Set(logKey(tc.index), rec, pebble.Sync))
			}
			closeStore(t, st)

			_, err := Open(dir, Options{Logger: quiet, VerifyOnOpen: true})
			wantCorrupt(t, err, tc.index, "Open with VerifyOnOpen")
			st, err = Open(dir, Options{Logger: quiet})
			if tc.cheapSees {
				wantCorrupt(t, err, tc.index, "Open")
				return
			}
			must(t, err)
			defer closeStore(t, st)
			var l raft.Log
			wantCorrupt(t, st.GetLog(tc.index, &l), tc.index, "GetLog")
		})
	}
}

// TestCorruptStable: a stable value whose record is damaged is a
// *CorruptStableError, for Get and GetUint64 alike.
func TestCorruptStable(t *testing.T) {
	t.Parallel()
	st := openStore(t, nil, t.TempDir())
	defer closeStore(t, st)
	must(t, st.SetUint64([]byte("CurrentTerm"), 9))
	rec := appendStable(nil, []byte{0, 0, 0, 0, 0, 0, 0, 9})
	for i := range rec {
		bad := append([]byte{}, rec...)
		bad[i] ^= 0x04
		must(t, st.db.Set(stableKey([]byte("CurrentTerm")), bad, pebble.Sync))
		_, err := st.GetUint64([]byte("CurrentTerm"))
		var ce *CorruptStableError
		if !errors.As(err, &ce) || ce.Key != "CurrentTerm" || !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d flipped: %v, want a *CorruptStableError", i, err)
		}
	}
}

// TestUnknownFormat: a store whose format is newer than this package's is
// refused.
func TestUnknownFormat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	st := openStore(t, nil, dir)
	must(t, st.db.Set([]byte(formatKey), []byte{storeFormat + 1}, pebble.Sync))
	closeStore(t, st)
	if _, err := Open(dir, Options{Logger: quiet}); !errors.Is(err, ErrUnknownFormat) {
		t.Fatalf("Open: %v, want ErrUnknownFormat", err)
	}
}
