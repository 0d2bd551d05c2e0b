package persist

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/strata-db/strata"
)

// childWALTail is the child mode "wal-tail": it commits walTailCommits
// items, one per Sync commit, says "done", and waits to be killed.
func childWALTail(dir string) {
	s, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
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
		tbl.Insert(txn, &item{ID: i, Name: strings.Repeat("x", 100)})
		if _, err := txn.Commit(); err != nil {
			fmt.Println("error:", err)
			return
		}
	}
	fmt.Println("done")
	select {}
}

const walTailCommits = 200

// killedStore runs the child mode "wal-tail" on a new directory, kills it
// with SIGKILL once its commits are acknowledged, and returns the directory.
func killedStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=wal-tail", childDirEnv+"="+dir)
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

// TestWALTailDamage: one damaged byte in the last 32 KiB of the newest log
// of a store whose process was killed is not silent: Open reports, at Warn
// level, that recovery stopped before the end of the log and how much it
// dropped (Pebble cannot tell a torn tail from damage there). An undamaged
// log of a killed process loads every acknowledged commit and warns of
// nothing.
func TestWALTailDamage(t *testing.T) {
	reopen := func(dir string) (int, string) {
		var logs bytes.Buffer
		s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
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

	clean := killedStore(t)
	if n, logs := reopen(clean); n != walTailCommits || logs != "" {
		t.Fatalf("undamaged: %d of %d commits, logs:\n%s", n, walTailCommits, logs)
	}

	damaged := killedStore(t)
	wal := newestLog(t, damaged)
	data, err := os.ReadFile(wal)
	if err != nil {
		t.Fatal(err)
	}
	end := len(bytes.TrimRight(data, "\x00")) // the log's last record ends here
	flipByte(t, wal, int64(end-3000))
	n, logs := reopen(damaged)
	t.Logf("damaged: %d of %d commits; logs:\n%s", n, walTailCommits, logs)
	if n == walTailCommits {
		t.Fatal("the damage dropped nothing: it was not in a record")
	}
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, filepath.Base(wal)) || !strings.Contains(logs, "dropped") {
		t.Fatalf("recovery dropped %d commits without a warning naming the log:\n%s", walTailCommits-n, logs)
	}
}
