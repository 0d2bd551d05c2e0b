package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/persist"
	"go.uber.org/goleak"
)

// The binaries the tests run: the strata command, and the example of an
// application that embeds it with its types registered.
var strataBin, embedBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	strataBin, embedBin = filepath.Join(dir, "strata"), filepath.Join(dir, "embed")
	for bin, pkg := range map[string]string{strataBin: ".", embedBin: "./examples/embed"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// result is what a run of a binary gave.
type result struct {
	stdout, stderr string
	code           int
}

// run runs bin with args and returns its output and exit code.
func run(t testing.TB, bin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CI=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running %s %v: %v", bin, args, err)
	}
	return r
}

// strata runs the strata binary and fails the test unless it exits with
// want.
func strataRun(t testing.TB, want int, args ...string) result {
	t.Helper()
	r := run(t, strataBin, args...)
	if r.code != want {
		t.Fatalf("strata %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// node is an object of the tests' table nodes (JSON codec).
type node struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
	Zone string `json:"zone"`
}

// blob is an object of the tests' table blobs (a binary encoding).
type blob struct {
	ID   uint32
	Data []byte
}

func (b *blob) AppendBinary(dst []byte) ([]byte, error) {
	dst = binary.BigEndian.AppendUint32(dst, b.ID)
	return append(dst, b.Data...), nil
}

func (b *blob) UnmarshalBinary(data []byte) error {
	if len(data) < 4 {
		return errors.New("blob: short")
	}
	b.ID, b.Data = binary.BigEndian.Uint32(data), bytes.Clone(data[4:])
	return nil
}

var (
	nodeByID = strata.Index[*node, uint64]{
		Name:       "id",
		FromObject: func(n *node) index.KeySet { return index.KeySetOf(index.Uint64(n.ID)) },
		FromKey:    index.Uint64,
		Unique:     true,
	}
	nodeByZone = strata.Index[*node, string]{
		Name:       "zone",
		FromObject: func(n *node) index.KeySet { return index.NewKeySet(index.String(n.Zone)) },
		FromKey:    index.String,
	}
	blobByID = strata.Index[*blob, uint32]{
		Name:       "id",
		FromObject: func(b *blob) index.KeySet { return index.KeySetOf(index.Uint32(b.ID)) },
		FromKey:    index.Uint32,
		Unique:     true,
	}
)

// fixture is a database written by the test into a store and snapshots.
type fixture struct {
	db    *strata.DB
	nodes strata.RWTable[*node]
	blobs strata.RWTable[*blob]
}

func (f *fixture) bindings() []persist.TableBinding {
	return []persist.TableBinding{persist.Table(f.nodes, persist.JSON[*node]()), persist.Table(f.blobs, persist.Binary[blob]())}
}

// newFixture makes a store in a new directory with nodes objects in nodes
// (ids 1 to n, zones eu, us, ap; node 2 deleted at the end) and n blobs,
// and returns the directory and the database it was written from (whose
// tables can no longer be written: the store is closed).
func newFixture(t testing.TB, n int) (string, *fixture) {
	t.Helper()
	dir := t.TempDir()
	s, err := persist.Open(dir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := newTables()
	if err := s.Register(f.bindings()...); err != nil {
		t.Fatal(err)
	}
	f.fill(t, n)
	return dir, f
}

// memFixture is newFixture's database, in memory only.
func memFixture(t testing.TB, n int) *fixture {
	f := newTables()
	f.fill(t, n)
	return f
}

func newTables() *fixture {
	f := &fixture{db: strata.New()}
	f.nodes = strata.MustNewTable(f.db, "nodes", nodeByID, nodeByZone)
	f.blobs = strata.MustNewTable(f.db, "blobs", blobByID)
	return f
}

func (f *fixture) fill(t testing.TB, n int) {
	t.Helper()
	zones := []string{"eu", "us", "ap"}
	txn := f.db.WriteTxn(f.nodes, f.blobs)
	for i := 1; i <= n; i++ {
		must(t)(f.nodes.Insert(txn, &node{ID: uint64(i), Name: fmt.Sprintf("node-%d", i), Zone: zones[i%3]}))
		must(t)(f.blobs.Insert(txn, &blob{ID: uint32(i), Data: bytes.Repeat([]byte{byte(i)}, 1+i%50)}))
	}
	mustCommit(t, txn)
	txn = f.db.WriteTxn(f.nodes)
	must(t)(f.nodes.Delete(txn, &node{ID: 2}))
	mustCommit(t, txn)
}

// must returns a function that fails the test if a write failed.
func must(t testing.TB) func(any, bool, error) {
	return func(_ any, _ bool, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func mustCommit(t testing.TB, txn strata.WriteTxn) {
	t.Helper()
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
}

// snapshotOf writes a snapshot of the fixture to a new file.
func (f *fixture) snapshotOf(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fixture.snap")
	if err := persist.WriteSnapshotFile(path, f.db.ReadTxn(), f.bindings()...); err != nil {
		t.Fatal(err)
	}
	return path
}
