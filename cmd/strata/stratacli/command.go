package stratacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/spf13/cobra"
	"github.com/strata-db/strata"
	"github.com/strata-db/strata/persist"
)

// An Option configures the command tree NewCommand returns.
type Option func(*config)

type config struct {
	name      string
	types     map[string]tableType
	typeNames map[string]string
	dial      Dialer
}

// WithTable registers the Go type of the table name, with the codec its
// objects are stored with and its indexes (those given to strata.NewTable):
// the command then decodes the table's values, shows its objects as
// columns of their fields, queries it on any index with keys typed as text,
// checks that every stored key is the object's primary key, and imports
// it from snapshots. A table stored with another codec or type (see
// persist.TableSchema) is shown raw, with a note saying why.
func WithTable[Obj any](name string, codec persist.Codec[Obj], primary strata.Indexer[Obj], secondary ...strata.Indexer[Obj]) Option {
	return func(c *config) {
		c.types[name] = &typeDef[Obj]{name: name, codec: codec, primary: primary, secondary: secondary}
	}
}

// WithTypeName gives the table registered with WithTable the type
// identity it is bound with (persist.TypeName), when it is not the Go
// type's.
func WithTypeName(table, typeName string) Option {
	return func(c *config) { c.typeNames[table] = typeName }
}

// WithName sets the command's name (Use), "strata" by default: an
// application that adds the tree under its own root may call it "debug"
// or "db".
func WithName(name string) Option {
	return func(c *config) { c.name = name }
}

// NewCommand returns the strata command tree: offline commands on a store
// directory (--dir) or a snapshot file (--file), and online ones on a
// running database (--addr). An application adds it to its own binary,
// with its table types registered (WithTable), under its root command
// (root.AddCommand), and runs it with Run; the strata binary is NewCommand()
// and Run alone.
//
// Data goes to the command's output (cmd.OutOrStdout), progress and logs to
// its error output (cmd.ErrOrStderr). The command never writes to a store
// except in compact and snapshot import.
func NewCommand(opts ...Option) *cobra.Command {
	c := &config{name: "strata", types: map[string]tableType{}, typeNames: map[string]string{}}
	for _, o := range opts {
		o(c)
	}
	if c.dial == nil {
		c.dial = HTTPDialer()
	}
	for name, tn := range c.typeNames {
		if t, ok := c.types[name]; ok {
			setTypeName(t, tn)
		}
	}
	a := &app{cfg: c}
	root := &cobra.Command{
		Use:   c.name,
		Short: "Look inside a Strata store, snapshot or running database",
		Long: `Look inside a Strata database: a store directory (--dir), a snapshot file
(--file), or a running database (--addr).

Offline commands read a store or a snapshot and never change it, except
compact and snapshot import. A store that a running process has open is
locked: query that process with --addr, or read a snapshot of it.

Tables whose Go types are registered (an application that embeds this
command) are decoded and shown as columns; others are shown as JSON if
stored with the JSON codec, as hex otherwise.

Data goes to stdout; progress and logs to stderr.

Exit codes: 0 ok, 1 error, 2 usage, 3 corruption (or check found errors),
4 not found, 5 cannot connect, 6 store locked (in use).`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// --version: the line of the version command.
		Version: readVersion().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &wrapped{msg: err.Error(), err: ErrUsage}
	})
	pf := root.PersistentFlags()
	pf.StringVarP(&a.dir, "dir", "d", "", "the store `directory` to read")
	pf.StringVarP(&a.file, "file", "f", "", "the snapshot `file` to read")
	pf.StringVar(&a.addr, "addr", "", "the running database's `address`: http(s)://host:port, or a unix socket: unix:/path, unix:///path, unix:relative/path")
	pf.StringVarP(&a.format, "output", "o", formatTable, "output `format`: "+strings.Join(formats, ", "))
	pf.StringVar(&a.progressMode, "progress", progressAuto, "progress on stderr: auto (a bar on a terminal, log lines otherwise), bar, log, none")
	pf.DurationVar(&a.progressEvery, "progress-interval", 5*time.Second, "how often a progress line is logged when stderr is not a terminal")
	pf.BoolVar(&a.wide, "wide", false, "do not cut long cells in table output")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		a.out, a.errOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
		if !slices.Contains(formats, a.format) {
			return usagef("--output %q: want one of %s", a.format, strings.Join(formats, ", "))
		}
		if !slices.Contains(progressModes, a.progressMode) {
			return usagef("--progress %q: want one of %s", a.progressMode, strings.Join(progressModes, ", "))
		}
		n := 0
		for _, s := range []string{a.dir, a.file, a.addr} {
			if s != "" {
				n++
			}
		}
		if n > 1 {
			return usagef("give one of --dir, --file and --addr")
		}
		return nil
	}
	root.AddCommand(
		a.inspectCommand(), a.tablesCommand(), a.dumpCommand(), a.getCommand(), a.countCommand(),
		a.checkCommand(), a.watchCommand(), a.compactCommand(), a.snapshotCommand(),
		a.clusterCommand(), a.versionCommand(),
	)
	root.AddCommand(a.combineCommands()...)
	return root
}

// Run runs cmd (a tree from NewCommand, or an application's root that
// holds one) with args, prints the error if there is one to the command's
// error output, and returns the exit code (ExitCode). The context, if
// cancelled (by a signal, say), stops long work.
func Run(ctx context.Context, cmd *cobra.Command, args []string) int {
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		name := cmd.Name()
		msg := err.Error()
		if !errors.Is(err, ErrErrorsFound) {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", name, msg)
		}
		if ExitCode(err) == ExitUsage && isCobraUsage(err) {
			fmt.Fprintf(cmd.ErrOrStderr(), "Run '%s --help' for usage.\n", name)
		}
	}
	return ExitCode(err)
}

// app is one run of the command tree: its flags and streams.
type app struct {
	cfg *config

	dir, file, addr string
	format          string
	progressMode    string
	progressEvery   time.Duration
	wide            bool

	out, errOut io.Writer
}

// setTypeName sets the type identity of a registered table.
func setTypeName(t tableType, name string) {
	if s, ok := t.(interface{ setTypeName(string) }); ok {
		s.setTypeName(name)
	}
}

func (d *typeDef[Obj]) setTypeName(name string) { d.typeName = name }

// logger is the logger of Pebble's messages: warnings and errors, on
// stderr.
func (a *app) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// infoLogger is the logger of what the command's clients have to say
// (a watch's reconnects): on stderr, without the time.
func (a *app) infoLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a.errOut, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, attr slog.Attr) slog.Attr {
			if len(groups) == 0 && attr.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return attr
		},
	}))
}

// rows returns a rowWriter of the output format on stdout.
func (a *app) rows() rowWriter {
	return newRowWriter(a.out, a.format, a.maxCell(), isTerminal(a.out))
}

// streamRows returns a rowWriter of the output format on stdout for rows
// shown as they come.
func (a *app) streamRows() rowWriter {
	return newStreamRowWriter(a.out, a.format, a.maxCell(), isTerminal(a.out))
}

// maxCell is how many runes a table's cell shows (0: all).
func (a *app) maxCell() int {
	if a.wide {
		return 0
	}
	return 60
}

// progress starts reporting the progress of what on stderr.
func (a *app) progress(what string, total int64) *progress {
	return newProgress(a.errOut, a.progressMode, a.progressEvery, what, total)
}

// logf writes a line to stderr.
func (a *app) logf(format string, args ...any) {
	fmt.Fprintf(a.errOut, format+"\n", args...)
}

// The kinds of source a command reads.
const (
	sourceStore    = "store"
	sourceSnapshot = "snapshot"
	sourceRemote   = "remote"
)

// source returns what the command reads: the --dir, --file or --addr
// flag, or a path given as an argument (a directory is a store, a file a
// snapshot).
func (a *app) source(pathArg string) (kind, path string, err error) {
	switch {
	case pathArg != "" && (a.dir != "" || a.file != "" || a.addr != ""):
		return "", "", usagef("give a path or one of --dir, --file and --addr, not both")
	case a.dir != "":
		return sourceStore, a.dir, nil
	case a.file != "":
		return sourceSnapshot, a.file, nil
	case a.addr != "":
		return sourceRemote, a.addr, nil
	case pathArg == "":
		return "", "", usagef("say what to read: --dir DIR (a store), --file FILE (a snapshot) or --addr ADDR (a running database)")
	}
	info, err := os.Stat(pathArg)
	if err != nil {
		return "", "", err
	}
	if info.IsDir() {
		return sourceStore, pathArg, nil
	}
	return sourceSnapshot, pathArg, nil
}

// openStore opens the store in dir for reading. A locked store fails with
// a message that names the ways out.
func (a *app) openStore(dir string) (*persist.Reader, error) {
	return a.openStoreOn(dir, nil)
}

// openStoreOn is openStore on the file system fsys (nil: the operating
// system's).
func (a *app) openStoreOn(dir string, fsys vfs.FS) (*persist.Reader, error) {
	r, err := persist.OpenReader(dir, persist.Options{Logger: a.logger(), FS: fsys})
	if err != nil {
		return nil, storeError(dir, err)
	}
	return r, nil
}

// storeError explains the errors of opening a store.
func storeError(dir string, err error) error {
	switch {
	case errors.Is(err, persist.ErrLocked):
		return fmt.Errorf("store %s is in use by a running process (%w).\n"+
			"  Query that process instead: --addr ADDR (its HTTP API), or\n"+
			"  read a snapshot of it: --file FILE (one the application wrote with persist.WriteSnapshotFile)", dir, err)
	case errors.Is(err, persist.ErrNoStore):
		return fmt.Errorf("%s: no store there: %w", dir, persist.ErrNoStore)
	}
	return err
}

// openSnapshot opens the snapshot file at path and reads its header.
func openSnapshot(path string) (*os.File, *persist.SnapshotReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	sr, err := persist.NewSnapshotReader(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	return f, sr, nil
}

// fileSize returns the size of the file f, 0 if unknown.
func fileSize(f *os.File) int64 {
	info, err := f.Stat()
	if err != nil {
		return 0
	}
	return info.Size()
}

// exactArgs is cobra.ExactArgs with a usage error naming the arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usagef("%s takes %s (%s), got %d", cmd.CommandPath(), count(len(names), "argument"), strings.Join(names, " "), len(args))
		}
		return nil
	}
}

// maxArgs is cobra.MaximumNArgs with a usage error.
func maxArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > n && n == 0 {
			return usagef("%s takes no arguments, got %d", cmd.CommandPath(), len(args))
		}
		if len(args) > n {
			return usagef("%s takes at most %s (%s), got %d", cmd.CommandPath(), count(n, "argument"), names, len(args))
		}
		return nil
	}
}

// optArg returns args[0], or "".
func optArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return ""
}
