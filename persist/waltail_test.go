package persist

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/wal"
	"github.com/strata-db/strata"
)

// childWALTail is the child mode "wal-tail": it commits walTailCommits
// items, one per Sync commit, says "done", and waits to be killed. With
// recycle (the mode "wal-recycle"), the items are larger and Pebble's
// memtable small, so that the log rotates and the newest log is a recycled
// file, which holds an older log's records after its own.
func childWALTail(dir string, recycle bool) {
	opts, size := Options{Logger: slog.New(slog.DiscardHandler)}, 100
	if recycle {
		opts.MemTableSize, size = 1<<20, 16<<10
	}
	s, err := Open(dir, opts)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	if err := s.Register(Table(tbl, Binary[item]())); err != nil {
		fmt.Println("error:", err)
		return
	}
	for i := range uint64(walTailCommits) {
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &item{ID: i, Name: strings.Repeat("x", size)}); err != nil {
			fmt.Println("error:", err)
			return
		}
		if _, err := txn.Commit(); err != nil {
			fmt.Println("error:", err)
			return
		}
	}
	fmt.Println("done")
	select {}
}

const walTailCommits = 200

// killedStore runs the child mode (wal-tail or wal-recycle) on a new
// directory, kills it with SIGKILL once its commits are acknowledged, and
// returns the directory.
func killedStore(t *testing.T, mode string) string {
	t.Helper()
	return killedStoreIn(t, t.TempDir(), mode)
}

// killedStoreReopened is killedStore on a store opened and closed once
// before: the first log of a new store is written in Pebble's recyclable
// chunk format, the logs after it in the WAL sync format, whose chunks
// record the offset the log was synced to.
func killedStoreReopened(t *testing.T, mode string) string {
	t.Helper()
	dir := t.TempDir()
	closeStore(t, openStore(t, dir, Options{}))
	return killedStoreIn(t, dir, mode)
}

// killedStoreIn is killedStore on the directory dir.
func killedStoreIn(t *testing.T, dir, mode string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if strings.TrimSpace(line) != "done" {
		t.Fatalf("child: %q", line)
	}
	return dir
}

// newestLog returns the path of the newest WAL of the store in dir.
func newestLog(t *testing.T, dir string) string {
	t.Helper()
	logs := filesOf(t, dir, "*.log")
	slices.Sort(logs)
	return logs[len(logs)-1]
}

// reopenItems opens the store in dir, registers the items table and
// returns how many objects it loaded and what the store logged, at Debug
// level and above.
func reopenItems(t *testing.T, dir string) (int, string) {
	t.Helper()
	var logs bytes.Buffer
	s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer closeStore(t, s)
	db := strata.New()
	tbl, _ := strata.NewTable(db, "items", itemByID, itemByName)
	if err := s.Register(Table(tbl, Binary[item]())); err != nil {
		t.Fatal(err)
	}
	return tbl.NumObjects(db.ReadTxn()), logs.String()
}

// warnings returns the lines of logs at Warn level or above, but for
// Pebble's warning that the disk is nearly full: it is about the machine
// the test runs on (a CI run failed on it with 8% of the disk free), not
// about the log the test damaged.
func warnings(logs string) []string {
	var w []string
	for line := range strings.Lines(logs) {
		if strings.Contains(line, "low disk space") {
			continue
		}
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			w = append(w, line)
		}
	}
	return w
}

// recoveryWarnings returns the lines of logs at Warn level or above about
// the log's recovery (not a slow disk's, say).
func recoveryWarnings(logs string) []string {
	var w []string
	for _, line := range warnings(logs) {
		if strings.Contains(line, "log recovery") {
			w = append(w, line)
		}
	}
	return w
}

// recoveryChecked returns the offsets at which the store checked what log
// recovery dropped (walStopped's Debug line), by log file name.
func recoveryChecked(logs string) map[string]int64 {
	re := regexp.MustCompile(`msg="pebble: log recovery checked" log=(\S+) offset=(\d+)`)
	checked := make(map[string]int64)
	for _, m := range re.FindAllStringSubmatch(logs, -1) {
		off, _ := strconv.ParseInt(m[2], 10, 64)
		checked[filepath.Base(m[1])] = off
	}
	return checked
}

// TestWALTailDamage: one damaged byte in the last 32 KiB of the newest log
// of a store whose process was killed is not silent: Open reports, at Warn
// level, that recovery stopped before the end of the log and how much it
// dropped (Pebble cannot tell a torn tail from damage there; the store
// can: the damaged chunk's bytes are there, and the log's chunks follow
// it). An undamaged log of a killed process loads every acknowledged
// commit and warns of nothing.
func TestWALTailDamage(t *testing.T) {
	clean := killedStore(t, "wal-tail")
	if n, logs := reopenItems(t, clean); n != walTailCommits || len(warnings(logs)) != 0 {
		t.Fatalf("undamaged: %d of %d commits, warnings:\n%s", n, walTailCommits, warnings(logs))
	}

	for _, c := range []struct {
		name   string
		killed func(*testing.T, string) string
		// says is what the warning says: in the WAL sync format, the
		// chunks after the damage record that it had been synced.
		says string
	}{
		{"recyclable chunks", killedStore, "damage, not a record torn by a crash"},
		{"WAL sync chunks", killedStoreReopened, "records that had been synced"},
	} {
		t.Run(c.name, func(t *testing.T) {
			damaged := c.killed(t, "wal-tail")
			wal := newestLog(t, damaged)
			data, err := os.ReadFile(wal)
			if err != nil {
				t.Fatal(err)
			}
			end := len(bytes.TrimRight(data, "\x00")) // the log's last record ends here
			flipByte(t, wal, int64(end-3000))
			n, logs := reopenItems(t, damaged)
			w := warnings(logs)
			t.Logf("damaged: %d of %d commits; warnings:\n%s", n, walTailCommits, w)
			if n == walTailCommits {
				t.Fatal("the damage dropped nothing: it was not in a record")
			}
			if len(w) != 1 || !strings.Contains(w[0], filepath.Base(wal)) || !strings.Contains(w[0], "dropped_bytes=") {
				t.Fatalf("recovery dropped %d commits without one warning naming the log:\n%s", walTailCommits-n, w)
			}
			if !strings.Contains(w[0], c.says) {
				t.Fatalf("the warning does not say %q:\n%s", c.says, w[0])
			}
		})
	}
}

// TestCleanCloseNoWarning: a store closed with Close and opened again
// loads everything and warns of nothing, although the recovery of its
// newest log stops before the end of the file, at the EOF trailer Pebble
// writes on a clean close; the check of what recovery dropped did run.
func TestCleanCloseNoWarning(t *testing.T) {
	dir := t.TempDir()
	for i := range 3 {
		if n, logs := reopenItems(t, dir); n != i {
			t.Fatalf("open %d: %d objects, want %d", i, n, i)
		} else if w := warnings(logs); len(w) != 0 {
			t.Fatalf("open %d of a store closed cleanly warns:\n%s", i, w)
		} else if i > 0 && len(recoveryChecked(logs)) == 0 {
			t.Fatalf("open %d: the store did not check what log recovery dropped:\n%s", i, logs)
		}
		s := openStore(t, dir, Options{})
		db := strata.New()
		tbl := itemTable(t, s, db, "items", Binary[item]())
		txn := db.WriteTxn(tbl)
		if _, _, err := tbl.Insert(txn, &item{ID: uint64(i), Name: "x"}); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, txn)
		closeStore(t, s)
	}
}

// TestWALRecycledTail: the newest log of a long-running store is often a
// recycled file, which holds an older log's records after its own. A store
// killed with SIGKILL in that state loads every acknowledged commit and
// warns of nothing.
func TestWALRecycledTail(t *testing.T) {
	dir := killedStore(t, "wal-recycle")
	wal := newestLog(t, dir)
	data, err := os.ReadFile(wal) // recovery replaces it
	if err != nil {
		t.Fatal(err)
	}
	n, logs := reopenItems(t, dir)
	if w := warnings(logs); n != walTailCommits || len(w) != 0 {
		t.Fatalf("%d of %d commits, warnings:\n%s", n, walTailCommits, w)
	}
	// The case is the one named: recovery stopped in the newest log, which
	// holds more than zeros after that point.
	off, ok := recoveryChecked(logs)[filepath.Base(wal)]
	if !ok {
		t.Fatalf("no check of what recovery dropped from %s:\n%s", wal, logs)
	}
	if rest := bytes.TrimRight(data[off:], "\x00"); len(rest) == 0 {
		t.Fatalf("%s holds only zeros after offset %d: not a recycled log", wal, off)
	} else {
		t.Logf("%s: %d bytes after offset %d, not zeros", filepath.Base(wal), len(rest), off)
	}
}

// TestWALStoppedHook pins what the store relies on in Pebble's logging:
// Pebble reports where the recovery of each log stopped with an Info line
// whose format holds walStoppedMessage and whose arguments hold the
// position as a wal.Offset. If an upgrade of Pebble changes either, this
// test fails (and log-tail damage would go unreported).
func TestWALStoppedHook(t *testing.T) {
	dir := t.TempDir()
	reopenItems(t, dir)
	_, logs := reopenItems(t, dir)
	if !strings.Contains(logs, walStoppedMessage) {
		t.Fatalf("Pebble no longer logs %q when a log's recovery stops:\n%s", walStoppedMessage, logs)
	}
	if len(recoveryChecked(logs)) == 0 {
		t.Fatalf("Pebble logged %q without a wal.Offset argument: the store did not check the log:\n%s", walStoppedMessage, logs)
	}
}

// TestWALTornTailNoWarning: a process killed while Pebble wrote a record
// leaves the start of that record in the log, its rest missing: the kill
// fell between two writes of a record longer than a block, or in the
// middle of one write, which the kernel ends at a page boundary. Recovery
// drops it; it was never synced, so no commit acknowledged in Sync mode
// was in it, and the store must not warn that some may be lost (it says
// what it dropped at Info level). The torn record is written into the log
// of a writer killed with SIGKILL, after its last acknowledged commit, in
// the log's own chunk format, as the writer would have written it.
func TestWALTornTailNoWarning(t *testing.T) {
	type tear struct {
		name string
		// cut returns where the torn record, which begins at start, ends.
		cut func(start int) int
	}
	type format struct {
		name   string
		killed func(*testing.T, string) string
	}
	for _, f := range []format{{"recyclable chunks", killedStore}, {"WAL sync chunks", killedStoreReopened}} {
		for _, c := range []tear{
			{"the first block of a longer record", func(start int) int { return (start/walBlockSize + 1) * walBlockSize }},
			{"a write cut at a page boundary", func(start int) int { return (start/walPage + 1) * walPage }},
		} {
			t.Run(f.name+"/"+c.name, func(t *testing.T) {
				testTornTail(t, f.killed, c.cut)
			})
		}
	}
}

// testTornTail is a case of TestWALTornTailNoWarning.
func testTornTail(t *testing.T, killed func(*testing.T, string) string, cut func(start int) int) {
	dir := killed(t, "wal-tail")
	logPath := newestLog(t, dir)
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	num, _, ok := wal.ParseLogFilename(filepath.Base(logPath))
	if !ok {
		t.Fatalf("%s: not a log file name", logPath)
	}
	end := len(bytes.TrimRight(data, "\x00")) // the last acknowledged record ends here
	data, start := tearRecord(data, end, uint32(num), cut)
	if err := os.WriteFile(logPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	n, logs := reopenItems(t, dir)
	if n != walTailCommits {
		t.Fatalf("%d of %d acknowledged commits loaded", n, walTailCommits)
	}
	if off, ok := recoveryChecked(logs)[filepath.Base(logPath)]; !ok || off != int64(start) {
		t.Fatalf("recovery of %s did not stop at the torn record (offset %d): checked %v\n%s", logPath, start, recoveryChecked(logs), logs)
	}
	if w := recoveryWarnings(logs); len(w) != 0 {
		t.Fatalf("a record torn by the kill, never synced, raised warnings:\n%s", w)
	}
	if !strings.Contains(logs, "torn by the crash") {
		t.Fatalf("the torn record dropped is not reported:\n%s", logs)
	}
}

// tearRecord writes into data, the log logNum whose records end at end, a
// record of two blocks as Pebble's log writer lays it out (in the chunk
// format of the log's first chunk: recyclable, or WAL sync with the synced
// offset end), cut where cut says; it returns the file and where the
// record begins.
func tearRecord(data []byte, end int, logNum uint32, cut func(start int) int) ([]byte, int) {
	full := byte(5) // recyclable
	header := walRecyclableHeader
	if data[6] >= 9 {
		full, header = 9, walSyncHeader
	}
	start := end
	if walBlockSize-start%walBlockSize <= header {
		start += walBlockSize - start%walBlockSize // the block's padding
	}
	var rec []byte
	for left, first := 2*walBlockSize, true; left > 0; first = false {
		room := walBlockSize - (start+len(rec))%walBlockSize - header
		n := min(left, room)
		left -= n
		pos := byte(2) // middle
		switch {
		case first && left == 0:
			pos = 0
		case first:
			pos = 1
		case left == 0:
			pos = 3
		}
		enc := full + pos
		chunk := make([]byte, header, header+n)
		binary.LittleEndian.PutUint16(chunk[4:6], uint16(n))
		chunk[6] = enc
		binary.LittleEndian.PutUint32(chunk[7:11], logNum)
		if header == walSyncHeader {
			binary.LittleEndian.PutUint64(chunk[11:19], uint64(end))
		}
		chunk = append(chunk, bytes.Repeat([]byte{0x5a}, n)...)
		crc := crc32.Checksum(chunk[6:], walCRCTable)
		binary.LittleEndian.PutUint32(chunk[0:4], (crc>>15|crc<<17)+0xa282ead8)
		rec = append(rec, chunk...)
	}
	rec = rec[:cut(start)-start]
	if len(data) < start+2*len(rec) {
		data = append(data, make([]byte, start+2*len(rec)-len(data))...)
	}
	copy(data[start:], rec)
	return data, start
}
