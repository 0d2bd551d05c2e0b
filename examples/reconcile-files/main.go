// Command reconcile-files keeps a directory in line with a table of
// desired files, with Strata's reconciler: it writes the files that are
// missing or differ, deletes the files the table does not want (pruning
// strangers), and writes each file's status back into the table.
//
//	go run ./examples/reconcile-files -dir /tmp/strata-files
//
// The desired files come from a manifest of "name: content" lines
// (-manifest), or a built-in one. Every run converges the directory and
// exits, so run it again after editing, adding or deleting files in the
// directory: it repairs what drifted. With -watch it keeps going, reading
// the manifest again every second, until interrupted.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
)

// File is a desired file.
type File struct {
	Name    string
	Content string
	Status  reconciler.Status
}

func (f *File) Clone() *File                        { c := *f; return &c }
func (f *File) GetStatus() reconciler.Status        { return f.Status }
func (f *File) SetStatus(s reconciler.Status) *File { f.Status = s; return f }

var fileByName = strata.Index[*File, string]{
	Name:       "name",
	FromObject: func(f *File) index.KeySet { return index.NewKeySet(index.String(f.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

// directory is the outside world: the files of one directory.
type directory struct {
	dir string
	out io.Writer

	mu     sync.Mutex
	prunes int // prunes run, refused ones included
}

func (d *directory) Update(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, f *File) error {
	path := filepath.Join(d.dir, f.Name)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, []byte(f.Content)) {
		d.say("  unchanged %s\n", f.Name)
		return nil
	}
	// Write a temporary file and rename it, so that the directory never
	// holds half a file.
	tmp := filepath.Join(d.dir, ".tmp-"+f.Name)
	if err := os.WriteFile(tmp, []byte(f.Content), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d.say("  wrote     %s\n", f.Name)
	return nil
}

func (d *directory) Delete(ctx context.Context, txn strata.ReadTxn, rev strata.Revision, f *File) error {
	err := os.Remove(filepath.Join(d.dir, f.Name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err == nil {
		d.say("  deleted   %s\n", f.Name)
	}
	return err
}

func (d *directory) Prune(ctx context.Context, txn strata.ReadTxn, desired iter.Seq2[*File, strata.Revision]) error {
	defer func() {
		d.mu.Lock()
		d.prunes++
		d.mu.Unlock()
	}()
	want := map[string]bool{}
	for f := range desired {
		want[f.Name] = true
	}
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	var strangers []string
	for _, e := range entries {
		if !want[e.Name()] {
			strangers = append(strangers, e.Name())
		}
	}
	// Refuse to empty a directory by mistake (see WithPruneBudget).
	if err := reconciler.CheckPruneBudget(ctx, len(strangers), len(entries)); err != nil {
		d.say("  not pruning %d of %d files: over the budget (-force prunes anyway)\n", len(strangers), len(entries))
		return err
	}
	for _, name := range strangers {
		if err := os.RemoveAll(filepath.Join(d.dir, name)); err != nil {
			return err
		}
		d.say("  pruned    %s\n", name)
	}
	return nil
}

// say prints a line of what the directory saw; workers call it at once.
func (d *directory) say(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _ = fmt.Fprintf(d.out, format, args...) // the screen: nobody to tell of a failed write
}

func (d *directory) pruneCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.prunes
}

const builtinManifest = `hello.txt: Hello from Strata's reconciler.
motd: Every file here is an object in a table; its status says whether it is on disk.
config.ini: [server]\nport = 8080
`

// readManifest returns the desired files: name -> content.
func readManifest(path string) (map[string]string, error) {
	text := builtinManifest
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		text = string(b)
	}
	files := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, content, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
			return nil, fmt.Errorf("manifest: bad line %q (want \"name: content\")", line)
		}
		files[name] = strings.ReplaceAll(strings.TrimSpace(content), `\n`, "\n") + "\n"
	}
	return files, sc.Err()
}

// load makes the table hold exactly the manifest's files, and returns the
// revision of the write (0 if nothing changed).
func load(db *strata.DB, files strata.RWTable[*File], manifest map[string]string) (strata.Revision, error) {
	wtxn := db.WriteTxn(files)
	defer wtxn.Abort()
	changed := false
	for f := range files.All(wtxn) {
		if _, ok := manifest[f.Name]; !ok {
			if _, _, err := files.Delete(wtxn, f); err != nil {
				return 0, err
			}
			changed = true
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range manifest {
			if !yield(n) {
				return
			}
		}
	}) {
		if old, _, ok := files.Get(wtxn, fileByName.Query(name)); ok && old.Content == manifest[name] {
			continue
		}
		if _, _, err := files.Insert(wtxn, &File{Name: name, Content: manifest[name], Status: reconciler.StatusPending()}); err != nil {
			return 0, err
		}
		changed = true
	}
	if !changed {
		return 0, nil
	}
	rev := files.Revision(wtxn)
	_, err := wtxn.Commit()
	return rev, err
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run is the program, with its arguments and output.
func run(ctx context.Context, args []string, out io.Writer) error {
	flags := flag.NewFlagSet("reconcile-files", flag.ContinueOnError)
	dir := flags.String("dir", filepath.Join(os.TempDir(), "strata-files"), "the directory to keep in line")
	manifestPath := flags.String("manifest", "", `file of "name: content" lines (default: a built-in one)`)
	watch := flags.Bool("watch", false, "keep going, reading the manifest every second")
	force := flags.Bool("force", false, "prune even if that deletes more than half of the directory")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	manifest, err := readManifest(*manifestPath)
	if err != nil {
		return err
	}

	db := strata.New()
	files := strata.MustNewTable(db, "files", fileByName)
	// The table is not complete until the manifest is loaded: no prune
	// before that.
	wtxn := db.WriteTxn(files)
	loaded := files.RegisterInitializer(wtxn, "manifest")
	if _, err := wtxn.Commit(); err != nil {
		return err
	}
	world := &directory{dir: *dir, out: out}
	r, err := reconciler.New(db, reconciler.Config[*File]{
		Table:           files,
		CloneObject:     (*File).Clone,
		GetObjectStatus: (*File).GetStatus,
		SetObjectStatus: (*File).SetStatus,
		Operations:      world,
	}, reconciler.WithWorkers(4), reconciler.WithPruneBudget(0.5), reconciler.WithRetry(100*time.Millisecond, 5*time.Second),
		reconciler.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx, nil) }()

	world.say("reconciling %d files into %s\n", len(manifest), *dir)
	rev, err := load(db, files, manifest)
	if err != nil {
		cancel()
		return errors.Join(err, <-done)
	}
	if *force {
		// A prune asked for ignores the budget; it waits for the table's
		// initialization, and makes one prune with it.
		r.Prune()
	}
	wtxn = db.WriteTxn(files)
	loaded(wtxn) // the table is initialized: the reconciler prunes
	if _, err := wtxn.Commit(); err != nil {
		cancel()
		return errors.Join(err, <-done)
	}
	waitConverged(ctx, r, world, rev, 1)
	for *watch && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			m, err := readManifest(*manifestPath)
			if err != nil {
				world.say("%v\n", err)
				continue
			}
			if rev, err := load(db, files, m); err != nil {
				world.say("%v\n", err)
			} else if rev != 0 {
				world.say("the manifest changed\n")
				waitConverged(ctx, r, world, rev, 0)
			}
		}
	}
	cancel()
	if err := <-done; err != nil {
		return err
	}
	for f := range files.All(db.ReadTxn()) {
		if _, err := fmt.Fprintf(out, "%-12s %s\n", f.Name, f.Status.Kind); err != nil {
			return err
		}
	}
	return nil
}

// waitConverged waits until every change up to rev is reconciled without
// error, and the directory was pruned (or a prune refused) prunes times.
func waitConverged(ctx context.Context, r *reconciler.Reconciler[*File], world *directory, rev strata.Revision, prunes int) {
	for ctx.Err() == nil {
		got, failing, err := r.WaitUntilReconciled(ctx, rev)
		if err == nil && got >= rev && failing == 0 && world.pruneCount() >= prunes {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
