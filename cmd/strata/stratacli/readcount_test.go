package stratacli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// compactedStore writes n hosts into a new store and compacts it, so that
// its objects are in table files.
func compactedStore(t testing.TB, n int) string {
	t.Helper()
	dir := t.TempDir()
	s, err := persist.Open(dir, persist.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	db := strata.New()
	hosts := strata.MustNewTable(db, "hosts", hostByName)
	if err := s.Register(persist.Table(hosts, persist.JSON[*host]())); err != nil {
		t.Fatal(err)
	}
	txn := db.WriteTxn(hosts)
	for i := range n {
		if _, _, err := hosts.Insert(txn, &host{Name: fmt.Sprintf("h%06d", i), Zone: strings.Repeat("z", 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckLSMProgress: the first phase of check, Pebble's level checker,
// which says nothing as it goes, shows the bytes it reads of the table
// files' size (it showed "0 B of 105.9 MiB (0%)" until it ended).
func TestCheckLSMProgress(t *testing.T) {
	dir := compactedStore(t, 20000)
	total := sstBytes(dir)
	if total < 64<<10 {
		t.Fatalf("table files of %d bytes: want at least 64 KiB", total)
	}
	a := &app{cfg: &config{types: map[string]tableType{}}, progressMode: progressNone, out: io.Discard, errOut: io.Discard}
	var res checkResult
	if err := a.checkStore(context.Background(), dir, &res); err != nil || res.Count != 0 || res.Objects != 20000 {
		t.Fatalf("check: %v %+v", err, res)
	}
	t.Logf("read %d of %d", res.lsmRead, total)
	if res.lsmRead < total*9/10 {
		t.Errorf("the LSM's check counted %d bytes read of %d", res.lsmRead, total)
	}
	// What a log line says of it.
	p := newProgress(io.Discard, progressNone, time.Second, "check: the LSM's files", total)
	p.add(res.lsmRead, 0)
	if line := p.line(p.start.Add(time.Second)); strings.Contains(line, "0 B of") || !strings.Contains(line, "%)") {
		t.Errorf("progress: %q", line)
	}
}
