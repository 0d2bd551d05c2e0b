package stratacli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata/persist"
)

// summary is what inspect tells of a store or a snapshot.
type summary struct {
	Kind string `json:"kind"` // "store" or "snapshot"
	Path string `json:"path"`
	// Format: the store's formats, or the snapshot's version.
	StoreFormat    uint64 `json:"store_format,omitempty"`
	PebbleFormat   uint64 `json:"pebble_format,omitempty"`
	SnapshotFormat uint32 `json:"snapshot_format,omitempty"`
	// Revision is the highest table revision.
	Revision uint64         `json:"revision"`
	Tables   []tableSummary `json:"tables"`
	Objects  uint64         `json:"objects"`
	// Bytes: a store's keys and values; a snapshot file's size.
	Bytes uint64 `json:"bytes"`
	// DiskBytes is the space a store's files take.
	DiskBytes uint64 `json:"disk_bytes,omitempty"`
	// Verified: the snapshot was read whole and every checksum matched.
	Verified *bool  `json:"verified,omitempty"`
	Error    string `json:"error,omitempty"`
}

// tableSummary is a table's line of a summary.
type tableSummary struct {
	Name         string `json:"name"`
	ID           uint32 `json:"id,omitempty"`
	Codec        string `json:"codec,omitempty"`
	CodecVersion uint32 `json:"codec_version"`
	Type         string `json:"type,omitempty"`
	Revision     uint64 `json:"revision"`
	Objects      uint64 `json:"objects"`
	// Bytes: the keys and values of a store's table; the values of a
	// snapshot's.
	Bytes     uint64 `json:"bytes"`
	DiskBytes uint64 `json:"disk_bytes,omitempty"`
	// Registered: the command knows the table's type and decodes it.
	Registered bool   `json:"registered"`
	Note       string `json:"note,omitempty"`
}

func (a *app) inspectCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "inspect [PATH]",
		Short: "Summarize a store or a snapshot: format, revision, tables, counts, bytes",
		Long: `Summarize a store directory or a snapshot file (PATH, or --dir/--file): its
format, its tables with their codecs, types, revisions, object counts and
sizes. A snapshot is read whole and verified; a store's tables are scanned
to count their objects.`,
		Args: maxArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, path, err := a.source(optArg(args))
			if err != nil {
				return err
			}
			var sum summary
			switch kind {
			case sourceStore:
				sum, err = a.inspectStore(cmd.Context(), path)
				if err != nil {
					return err
				}
			case sourceSnapshot:
				sum, err = a.inspectSnapshot(cmd.Context(), path)
				if sum.Path == "" {
					return err
				}
			default:
				return usagef("inspect reads a store or a snapshot; for a running database, use tables")
			}
			if werr := writeDoc(a.out, a.format, sum, sum.text); werr != nil {
				return werr
			}
			return err
		},
	}
}

// text writes the summary as text.
func (s summary) text(w io.Writer) error {
	fmt.Fprintf(w, "%s\t%s\n", s.Kind, s.Path)
	if s.Kind == sourceStore {
		fmt.Fprintf(w, "format\tstore %d, pebble %d\n", s.StoreFormat, s.PebbleFormat)
	} else {
		fmt.Fprintf(w, "format\tsnapshot %d\n", s.SnapshotFormat)
	}
	fmt.Fprintf(w, "revision\t%d\n", s.Revision)
	fmt.Fprintf(w, "tables\t%d\n", len(s.Tables))
	fmt.Fprintf(w, "objects\t%d\n", s.Objects)
	fmt.Fprintf(w, "bytes\t%d (%s)\n", s.Bytes, humanBytes(int64(s.Bytes)))
	if s.Kind == sourceStore {
		fmt.Fprintf(w, "disk\t%d (%s)\n", s.DiskBytes, humanBytes(int64(s.DiskBytes)))
	}
	if s.Verified != nil {
		fmt.Fprintf(w, "verified\t%v\n", *s.Verified)
	}
	if s.Error != "" {
		fmt.Fprintf(w, "error\t%s\n", s.Error)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "TABLE\tCODEC\tTYPE\tREVISION\tOBJECTS\tBYTES\tREGISTERED")
	for _, t := range s.Tables {
		codec := t.Codec
		if codec == "" {
			codec = "?"
		}
		fmt.Fprintf(w, "%s\t%s/%d\t%s\t%d\t%d\t%d\t%v\n", t.Name, codec, t.CodecVersion, t.Type, t.Revision, t.Objects, t.Bytes, t.Registered)
	}
	for _, t := range s.Tables {
		if t.Note != "" {
			fmt.Fprintf(w, "note: %s\n", t.Note)
		}
	}
	return nil
}

// tableSummary returns the start of the summary of a table stored with
// schema stored.
func (s *session) tableSummary(name string, stored *persist.Schema, version uint32) tableSummary {
	t := tableSummary{Name: name, CodecVersion: version}
	if stored != nil {
		t.Codec, t.Type = stored.Codec, stored.Type
		if version == 0 {
			t.CodecVersion = stored.Version
		}
	}
	v := s.view(name, stored, version)
	t.Registered, t.Note = v.typed != nil, v.note
	return t
}

func (a *app) inspectStore(ctx context.Context, dir string) (summary, error) {
	r, err := a.openStore(dir)
	if err != nil {
		return summary{}, err
	}
	defer r.Close()
	s, err := a.newSession()
	if err != nil {
		return summary{}, err
	}
	f := r.Format()
	sum := summary{Kind: sourceStore, Path: dir, StoreFormat: f.Store, PebbleFormat: f.Pebble, DiskBytes: r.DiskUsage(), Tables: []tableSummary{}}
	p := a.progress("inspect", 0)
	defer p.done()
	for _, st := range r.Tables() {
		t := s.tableSummary(st.Name, st.Schema, 0)
		t.ID, t.Revision = st.ID, st.Revision
		var counted uint64 // t.Bytes in the progress
		for obj, err := range r.Objects(st.Name, nil, nil) {
			if err != nil {
				return summary{}, err
			}
			t.Objects++
			t.Bytes += uint64(len(obj.Key) + len(obj.Value))
			t.Revision = max(t.Revision, obj.Revision)
			if t.Objects%4096 == 0 {
				p.add(int64(t.Bytes-counted), 4096)
				counted = t.Bytes
				if err := ctx.Err(); err != nil {
					return summary{}, err
				}
			}
		}
		if t.DiskBytes, err = r.TableDiskUsage(st.Name); err != nil {
			return summary{}, err
		}
		sum.add(t)
	}
	return sum, nil
}

// add adds a table to the summary.
func (s *summary) add(t tableSummary) {
	s.Tables = append(s.Tables, t)
	s.Objects += t.Objects
	s.Revision = max(s.Revision, t.Revision)
	if s.Kind == sourceStore {
		s.Bytes += t.Bytes
	}
}

// inspectSnapshot summarizes the snapshot at path, reading it whole. If the
// file is damaged, it returns what its header tells with the error (and
// the Path set), or no summary if it cannot be read at all.
func (a *app) inspectSnapshot(ctx context.Context, path string) (summary, error) {
	f, sr, err := openSnapshot(path)
	if err != nil {
		return summary{}, err
	}
	defer f.Close()
	s, err := a.newSession()
	if err != nil {
		return summary{}, err
	}
	sum := summary{Kind: sourceSnapshot, Path: path, SnapshotFormat: sr.Version(), Bytes: uint64(fileSize(f)), Tables: []tableSummary{}}
	infos := sr.Tables()
	tables := make([]tableSummary, len(infos))
	for i, t := range infos {
		tables[i] = s.tableSummary(t.Name, snapshotSchema(t), t.CodecVersion)
		tables[i].Revision, tables[i].Objects = t.Revision, t.Objects
	}
	p := a.progress("inspect", int64(sum.Bytes))
	defer p.done()
	n := 0
	for sr.Next() {
		r := sr.Record()
		tables[r.Table].Bytes += uint64(len(r.Value))
		if n++; n%1024 == 0 {
			p.set(int64(sr.Offset()))
			if err := ctx.Err(); err != nil {
				return summary{}, err
			}
		}
	}
	for _, t := range tables {
		sum.add(t)
	}
	ok := sr.Err() == nil
	sum.Verified = &ok
	if !ok {
		err = fmt.Errorf("snapshot %s: %w", path, sr.Err())
		sum.Error = sr.Err().Error()
	}
	return sum, err
}

// tableListing is a table's line of tables: what a store's catalog or a
// snapshot's header tells of it, and nothing else. A store's catalog
// holds no object counts and no table revision a reader can trust (its
// revision record is written only by a commit whose last change to the
// table was a delete; the objects' revisions are the rest), so for a
// store Revision and Objects are nil and left out: never a zero that
// reads as real. inspect counts them.
type tableListing struct {
	Name         string `json:"name"`
	ID           uint32 `json:"id,omitempty"`
	Codec        string `json:"codec,omitempty"`
	CodecVersion uint32 `json:"codec_version"`
	Type         string `json:"type,omitempty"`
	// Revision and Objects: a snapshot's header's; nil for a store.
	Revision *uint64 `json:"revision,omitempty"`
	Objects  *uint64 `json:"objects,omitempty"`
	// Registered: the command knows the table's type and decodes it.
	Registered bool   `json:"registered"`
	Note       string `json:"note,omitempty"`
}

// listing returns the line of tables of the summary t.
func listing(t tableSummary) tableListing {
	return tableListing{Name: t.Name, ID: t.ID, Codec: t.Codec, CodecVersion: t.CodecVersion, Type: t.Type,
		Registered: t.Registered, Note: t.Note}
}

// writeListing writes the lines of tables as text: a snapshot's with its
// header's revisions and counts, a store's without.
func writeListing(w io.Writer, tables []tableListing, counted bool) error {
	if counted {
		fmt.Fprintln(w, "TABLE\tCODEC\tTYPE\tREVISION\tOBJECTS\tREGISTERED")
	} else {
		fmt.Fprintln(w, "TABLE\tCODEC\tTYPE\tREGISTERED")
	}
	for _, t := range tables {
		codec := t.Codec
		if codec == "" {
			codec = "?"
		}
		if counted {
			fmt.Fprintf(w, "%s\t%s/%d\t%s\t%d\t%d\t%v\n", t.Name, codec, t.CodecVersion, t.Type, *t.Revision, *t.Objects, t.Registered)
		} else {
			fmt.Fprintf(w, "%s\t%s/%d\t%s\t%v\n", t.Name, codec, t.CodecVersion, t.Type, t.Registered)
		}
	}
	for _, t := range tables {
		if t.Note != "" {
			fmt.Fprintf(w, "note: %s\n", t.Note)
		}
	}
	return nil
}

func (a *app) tablesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "tables [PATH]",
		Short: "List the tables of a store, a snapshot or a running database",
		Long: `List the tables of a store or a snapshot (PATH, or --dir/--file) from its
catalog or header, without reading the objects; or those of a running
database (--addr) with their counts, revisions and indexes.

A snapshot's header counts each table's objects and gives its revision; a
store's catalog does neither, so for a store they are left out: inspect
reads the objects and counts them.`,
		Args: maxArgs(1, "PATH"),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, path, err := a.source(optArg(args))
			if err != nil {
				return err
			}
			if kind == sourceRemote {
				return a.tablesRemote(cmd.Context(), path)
			}
			s, err := a.newSession()
			if err != nil {
				return err
			}
			tables := []tableListing{}
			if kind == sourceStore {
				r, err := a.openStore(path)
				if err != nil {
					return err
				}
				defer r.Close()
				for _, st := range r.Tables() {
					t := listing(s.tableSummary(st.Name, st.Schema, 0))
					t.ID = st.ID
					tables = append(tables, t)
				}
			} else {
				f, sr, err := openSnapshot(path)
				if err != nil {
					return err
				}
				defer f.Close()
				for _, info := range sr.Tables() {
					t := listing(s.tableSummary(info.Name, snapshotSchema(info), info.CodecVersion))
					t.Revision, t.Objects = &info.Revision, &info.Objects
					tables = append(tables, t)
				}
			}
			return writeDoc(a.out, a.format, tables, func(w io.Writer) error {
				return writeListing(w, tables, kind == sourceSnapshot)
			})
		},
	}
}
