package stratacli

import (
	"context"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/spf13/cobra"
	"github.com/strata-db/strata/persist"
)

func (a *app) diffCommand() *cobra.Command {
	var tables []string
	var exitCode bool
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two snapshot files, table by table and object by object",
		Long: `Compare snapshots A and B (every table, or those of --tables): tables added
or removed, schemas and revisions changed, and objects added, removed or
changed from A to B.

Objects of a registered table are matched by primary key. A snapshot
records no keys, so objects of other tables are matched by revision (an
object changed between the snapshots has a new revision: it shows as one
removed and one added). Prints a row per difference, then the number of
differences on stderr. With --exit-code, exits with 1 if there are any.

Memory: the objects of A's tables are kept as hashes while B is read.`,
		Args: exactArgs("A", "B"),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := a.diff(cmd.Context(), args[0], args[1], tables)
			if err != nil {
				return err
			}
			if n == 0 {
				a.logf("no differences")
				return nil
			}
			a.logf("%s", count(n, "difference"))
			if exitCode {
				return errDifferent
			}
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&tables, "tables", nil, "the `tables` to compare (all by default)")
	cmd.Flags().BoolVar(&exitCode, "exit-code", false, "exit with 1 if the snapshots differ")
	return cmd
}

// diffEntry is what A holds of an object: its revision and a hash of its
// value.
type diffEntry struct {
	rev  uint64
	hash uint64
	text string // the primary key as text, in a registered table
}

// diffTable is a table of both snapshots being compared.
type diffTable struct {
	name  string
	typed bool // matched by primary key
	view  *view
	byKey map[string]diffEntry
	byRev map[uint64]uint64 // revision -> hash
}

func (a *app) diff(ctx context.Context, pathA, pathB string, only []string) (int, error) {
	fa, ra, err := openSnapshot(pathA)
	if err != nil {
		return 0, err
	}
	defer fa.Close()
	fb, rb, err := openSnapshot(pathB)
	if err != nil {
		return 0, err
	}
	defer fb.Close()
	s, err := a.newSession()
	if err != nil {
		return 0, err
	}
	out := a.rows()
	n := 0
	emit := func(table, change, key string, revA, revB uint64, detail string) error {
		n++
		return out.write(fields{{"table", table}, {"change", change}, {"key", key}, {"revision_a", revA}, {"revision_b", revB}, {"detail", detail}})
	}
	want := func(name string) bool { return len(only) == 0 || slices.Contains(only, name) }

	// The tables: those of one side only, and changes of header.
	infosA, infosB := ra.Tables(), rb.Tables()
	tablesA := make([]*diffTable, len(infosA))
	common := map[string]*diffTable{}
	for i, ta := range infosA {
		if !want(ta.Name) {
			continue
		}
		j := slices.IndexFunc(infosB, func(t persist.SnapshotTableInfo) bool { return t.Name == ta.Name })
		if j < 0 {
			if err := emit(ta.Name, "table removed", "", ta.Revision, 0, count(ta.Objects, "object")); err != nil {
				return n, err
			}
			continue
		}
		tb := infosB[j]
		if sa, sb := snapshotSchema(ta), snapshotSchema(tb); *sa != *sb {
			if err := emit(ta.Name, "schema changed", "", ta.Revision, tb.Revision, fmt.Sprintf("%v -> %v", *sa, *sb)); err != nil {
				return n, err
			}
		}
		va, vb := s.view(ta.Name, snapshotSchema(ta), ta.CodecVersion), s.view(tb.Name, snapshotSchema(tb), tb.CodecVersion)
		dt := &diffTable{name: ta.Name, typed: va.typed != nil && vb.typed != nil, view: va,
			byKey: map[string]diffEntry{}, byRev: map[uint64]uint64{}}
		tablesA[i], common[ta.Name] = dt, dt
	}
	for _, tb := range infosB {
		if want(tb.Name) && !slices.ContainsFunc(infosA, func(t persist.SnapshotTableInfo) bool { return t.Name == tb.Name }) {
			if err := emit(tb.Name, "table added", "", 0, tb.Revision, count(tb.Objects, "object")); err != nil {
				return n, err
			}
		}
	}

	// A's objects.
	seed := maphash.MakeSeed()
	for ra.Next() {
		r := ra.Record()
		dt := tablesA[r.Table]
		if dt == nil {
			continue
		}
		h := maphash.Bytes(seed, r.Value)
		if dt.typed {
			key, text, err := dt.key(r, infosA[r.Table].CodecVersion)
			if err != nil {
				return n, fmt.Errorf("snapshot %s: %w", pathA, err)
			}
			dt.byKey[key] = diffEntry{r.Revision, h, text}
		} else {
			dt.byRev[r.Revision] = h
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
	}
	if err := ra.Err(); err != nil {
		return n, fmt.Errorf("snapshot %s: %w", pathA, err)
	}

	// B's objects, against A's.
	for rb.Next() {
		r := rb.Record()
		dt := common[infosB[r.Table].Name]
		if dt == nil {
			continue
		}
		h := maphash.Bytes(seed, r.Value)
		if dt.typed {
			key, text, err := dt.key(r, infosB[r.Table].CodecVersion)
			if err != nil {
				return n, fmt.Errorf("snapshot %s: %w", pathB, err)
			}
			e, ok := dt.byKey[key]
			delete(dt.byKey, key)
			switch {
			case !ok:
				err = emit(dt.name, "added", text, 0, r.Revision, "")
			case e.hash != h || e.rev != r.Revision:
				err = emit(dt.name, "changed", text, e.rev, r.Revision, "")
			}
			if err != nil {
				return n, err
			}
			continue
		}
		ha, ok := dt.byRev[r.Revision]
		delete(dt.byRev, r.Revision)
		switch {
		case !ok:
			err = emit(dt.name, "added", "", 0, r.Revision, "")
		case ha != h:
			err = emit(dt.name, "changed", "", r.Revision, r.Revision, "another object at the same revision")
		}
		if err != nil {
			return n, err
		}
	}
	if err := rb.Err(); err != nil {
		return n, fmt.Errorf("snapshot %s: %w", pathB, err)
	}
	// What A has and B does not, in A's table order.
	for _, dt := range tablesA {
		if dt == nil {
			continue
		}
		keys := make([]string, 0, len(dt.byKey))
		for k := range dt.byKey {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if err := emit(dt.name, "removed", dt.byKey[k].text, dt.byKey[k].rev, 0, ""); err != nil {
				return n, err
			}
		}
		revs := make([]uint64, 0, len(dt.byRev))
		for r := range dt.byRev {
			revs = append(revs, r)
		}
		slices.Sort(revs)
		for _, r := range revs {
			if err := emit(dt.name, "removed", "", r, 0, ""); err != nil {
				return n, err
			}
		}
	}
	return n, out.close()
}

// key returns the primary key of a record of a registered table, raw and
// as text.
func (dt *diffTable) key(r persist.SnapshotRecord, version uint32) (string, string, error) {
	obj, err := dt.view.typed.decode(r.Value, version)
	if err != nil {
		return "", "", fmt.Errorf("table %s: decoding the object at revision %d: %w", dt.name, r.Revision, err)
	}
	key, err := dt.view.typed.primaryKey(obj)
	if err != nil {
		return "", "", err
	}
	text, _ := dt.view.typed.anyTable().KeyString("", key)
	return string(key), text, nil
}
