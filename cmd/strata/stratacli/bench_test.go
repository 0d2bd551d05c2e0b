package stratacli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
)

var benchObjects = flag.Int("stratacli.benchobjects", 100_000, "objects per table in the benchmarks' snapshot")

// benchRecord is an object of the benchmarks' tables: about 100 bytes.
type benchRecord struct {
	ID    uint64 `json:"id"`
	Name  string `json:"name"`
	Group string `json:"group"`
	Data  []byte `json:"data"`
}

func (r *benchRecord) AppendBinary(b []byte) ([]byte, error) {
	b = binary.BigEndian.AppendUint64(b, r.ID)
	b = binary.AppendUvarint(b, uint64(len(r.Name)))
	b = append(b, r.Name...)
	b = binary.AppendUvarint(b, uint64(len(r.Group)))
	b = append(b, r.Group...)
	return append(b, r.Data...), nil
}

func (r *benchRecord) UnmarshalBinary(b []byte) error {
	if len(b) < 8 {
		return errors.New("short")
	}
	r.ID = binary.BigEndian.Uint64(b)
	b = b[8:]
	n, k := binary.Uvarint(b)
	r.Name, b = string(b[k:k+int(n)]), b[k+int(n):]
	n, k = binary.Uvarint(b)
	r.Group, b = string(b[k:k+int(n)]), b[k+int(n):]
	r.Data = bytes.Clone(b)
	return nil
}

var benchByID = strata.Index[*benchRecord, uint64]{
	Name:       "id",
	FromObject: func(r *benchRecord) index.KeySet { return index.KeySetOf(index.Uint64(r.ID)) },
	FromKey:    index.Uint64,
	Unique:     true,
}

var benchSnap struct {
	once sync.Once
	path string
	err  error
}

// benchSnapshot writes, once, a snapshot of two tables of benchObjects
// objects each: "json" (JSON codec) and "binary" (a binary encoding).
func benchSnapshot(b *testing.B) string {
	benchSnap.once.Do(func() {
		dir, err := os.MkdirTemp("", "stratacli-bench-")
		if err != nil {
			benchSnap.err = err
			return
		}
		db := strata.New()
		js := strata.MustNewTable(db, "json", benchByID)
		bin := strata.MustNewTable(db, "binary", benchByID)
		txn := db.WriteTxn(js, bin)
		for i := range *benchObjects {
			r := &benchRecord{ID: uint64(i), Name: fmt.Sprintf("record-%08d", i), Group: fmt.Sprintf("g%d", i%16), Data: bytes.Repeat([]byte{byte(i)}, 40)}
			if _, _, err := js.Insert(txn, r); err != nil {
				txn.Abort()
				benchSnap.err = err
				return
			}
			if _, _, err := bin.Insert(txn, r); err != nil {
				txn.Abort()
				benchSnap.err = err
				return
			}
		}
		if _, err := txn.Commit(); err != nil {
			benchSnap.err = err
			return
		}
		benchSnap.path = filepath.Join(dir, "bench.snap")
		benchSnap.err = persist.WriteSnapshotFile(benchSnap.path, db.ReadTxn(),
			persist.Table(js, persist.JSON[*benchRecord]()), persist.Table(bin, persist.Binary[benchRecord]()))
	})
	if benchSnap.err != nil {
		b.Fatal(benchSnap.err)
	}
	return benchSnap.path
}

// rawJSONLines writes the records of the snapshot's first table (json, or
// binary with hexValues) as JSON lines with the raw reader, and returns the
// number of lines.
func rawJSONLines(b *testing.B, path string, hexValues bool) int {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sr, err := persist.NewSnapshotReader(f)
	if err != nil {
		b.Fatal(err)
	}
	var out lineCounter
	w := bufio.NewWriterSize(&out, 64<<10)
	var line []byte
	for sr.Next() {
		r := sr.Record()
		if r.Table != 0 {
			break
		}
		line = strconv.AppendUint(append(line[:0], `{"revision":`...), r.Revision, 10)
		if hexValues {
			line = append(line, `,"version":1,"value_hex":"`...)
			line = append(hex.AppendEncode(line, r.Value), '"')
		} else {
			line = append(append(line, `,"object":`...), r.Value...)
		}
		line = append(line, '}', '\n')
		w.Write(line)
	}
	if err := sr.Err(); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	return out.n
}

// lineCounter counts the lines written to it.
type lineCounter struct{ n int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

// runBench runs the command tree with args, its output counted, and fails
// unless it exits 0 and writes want lines.
func runBench(b *testing.B, opts []Option, want int, args ...string) {
	cmd := NewCommand(opts...)
	var out lineCounter
	var errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if code := Run(context.Background(), cmd, append(args, "--progress", "none")); code != 0 || out.n != want {
		b.Fatalf("%v: exit %d, %d lines (want %d)\n%s", args, code, out.n, want, errOut.String())
	}
}

// loopCPU runs b.Loop's loop of op and reports the process's CPU time
// per op.
func loopCPU(b *testing.B, op func()) {
	cpu0, ok0 := processCPU()
	n := 0
	for b.Loop() {
		op()
		n++
	}
	if cpu1, ok1 := processCPU(); ok0 && ok1 && n > 0 {
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
	}
}

// BenchmarkSnapshotRead compares the command's reading of a snapshot with
// the raw snapshot reader on the same file: persist.ReadSnapshot with no
// tables, which verifies the file (every checksum) and decodes nothing.
// verify is `strata snapshot verify`; dump-* is `strata dump TABLE` of the
// file's first table, to JSON lines or a table, of JSON values (shown as
// they are) or binary ones (shown in hex); dump-typed decodes them with
// the registered type. Throughput (MB/s) is of the whole file for the raw
// reader and verify, of the table's share of it for the dumps. cpu-ns/op
// is the process's CPU time per op (Unix), which a shared machine's other
// programs disturb less than ns/op: compare raw-* and dump-* by it.
func BenchmarkSnapshotRead(b *testing.B) {
	path := benchSnapshot(b)
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	n := *benchObjects
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(info.Size())
		b.ReportAllocs()
		loopCPU(b, func() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			si, err := persist.ReadSnapshot(f)
			f.Close()
			if err != nil || si.Objects != uint64(2*n) {
				b.Fatalf("%d objects, %v", si.Objects, err)
			}
		})
	})
	b.Run("verify", func(b *testing.B) {
		b.SetBytes(info.Size())
		b.ReportAllocs()
		loopCPU(b, func() { runBench(b, nil, 1, "snapshot", "verify", path) })
	})
	// What a program of the raw reader writes of the first table, as the
	// dump does: the same JSON lines (a JSON value as it is, a binary one
	// in hex), to the same counter, through the same buffer size.
	for _, c := range []struct {
		name string
		hex  bool
	}{{"raw-json-jsonl", false}, {"raw-binary-jsonl", true}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(info.Size() / 2)
			b.ReportAllocs()
			loopCPU(b, func() {
				if lines := rawJSONLines(b, path, c.hex); lines != n {
					b.Fatalf("%d lines", lines)
				}
			})
		})
	}
	typed := []Option{WithTable("json", persist.JSON[*benchRecord](), benchByID), WithTable("binary", persist.Binary[benchRecord](), benchByID)}
	for _, c := range []struct {
		name   string
		opts   []Option
		table  string
		format string
		lines  int
	}{
		{"dump-json-jsonl", nil, "json", formatJSONL, n},
		{"dump-json-table", nil, "json", formatTable, n + 1},
		{"dump-binary-jsonl", nil, "binary", formatJSONL, n},
		{"dump-typed-jsonl", typed, "binary", formatJSONL, n},
	} {
		b.Run(c.name, func(b *testing.B) {
			// The table's share of the file: about half.
			b.SetBytes(info.Size() / 2)
			b.ReportAllocs()
			loopCPU(b, func() {
				runBench(b, c.opts, c.lines, "dump", c.table, "-f", path, "-o", c.format)
			})
		})
	}
	if strings.HasSuffix(path, ".snap") {
		b.Cleanup(func() { os.RemoveAll(filepath.Dir(path)) })
	}
}
