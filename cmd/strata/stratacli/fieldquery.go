package stratacli

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
)

// Queries on fields of a table of unknown type (--by).
//
// A store holds no secondary index, and a snapshot no key at all: an
// index is computed from the objects by the application's index function.
// Of a table stored with the JSON codec, the command can read fields, so
// --by FIELD:KIND computes an index of its own as it reads the table:
// each object's key is its field's value as a key of that kind (each
// element's, for an array: a multi-key index), FIELD:KIND,FIELD:KIND a
// composite. Objects without the field are left out, as an index function
// leaves out an object it gives no key, and counted on stderr. The keys
// are ordered as the index package encodes them, objects of one key in
// primary key order, as a secondary index orders them. Whether it is the
// application's index (the same field, the same encoding) the command
// cannot know: it is a query on the field, not on the index.

// byFieldError is the error of --by on a table whose fields the command
// cannot read.
func byFieldError(v *view, by string) error {
	codec := "not recorded"
	if v.stored != nil && v.stored.Codec != "" {
		codec = v.stored.Codec
	}
	return &wrapped{err: ErrIndexNotStored, msg: fmt.Sprintf(
		"table %s: --by %s reads the objects' fields, and this table's codec is %s: only objects stored as JSON have fields "+
			"this command can read without the table's type", v.name, by, codec)}
}

// byFieldUsable checks that --by can query the table of v: one of unknown
// type (a registered type has its indexes), stored as JSON.
func byFieldUsable(v *view, by string) error {
	switch {
	case v.typed != nil:
		return usagef("table %s's type is registered: query its indexes with --index, not --by", v.name)
	case !v.json:
		return byFieldError(v, by)
	}
	return nil
}

// byEntry is an object of a table queried --by, under one of its keys.
type byEntry struct {
	key index.Key
	rec record
}

// dumpByField writes the records of the JSON table of v (of unknown
// type) that q selects on the keys --by computes from their fields.
func (a *app) dumpByField(v *view, records iter.Seq2[record, error], q *queryFlags, p *pager) error {
	parts, err := parseFieldSpec("--by", q.by, q.by)
	if err != nil {
		return err
	}
	kinds := make([]string, len(parts))
	for i, part := range parts {
		kinds[i] = part.kind
	}
	format := q.keyFormat
	if format == keyFormatText {
		format = strings.Join(kinds, ",")
	}
	parse := keyParser(format, q.keySep)
	var want [2]index.Key
	for i, text := range []*string{q.keyText(), q.toText()} {
		if text == nil {
			continue
		}
		if want[i], err = parse(*text); err != nil {
			if format != keyFormatHex {
				err = fmt.Errorf("table %s: key %q as %s: %w", v.name, *text, format, err)
			}
			return err
		}
	}
	var entries []byEntry
	missing := 0
	for rec, err := range records {
		if err != nil {
			return err
		}
		keys, err := fieldKeys(parts, rec.value)
		if errors.Is(err, errNoField) {
			missing++
			continue
		}
		if err != nil {
			return usagef("table %s: --by %s: the object at revision %d: %v", v.name, q.by, rec.revision, err)
		}
		rec.key, rec.value = bytes.Clone(rec.key), bytes.Clone(rec.value)
		for _, k := range keys {
			entries = append(entries, byEntry{key: k, rec: rec})
		}
	}
	if missing > 0 {
		a.logf("note: table %s: %s without a value at %s left out", v.name, count(missing, "object"), fieldSpecString(parts))
	}
	// Stable: objects of one key stay in primary key order, the records'.
	slices.SortStableFunc(entries, func(x, y byEntry) int { return bytes.Compare(x.key, y.key) })
	op := q.op()
	for _, e := range entries {
		if !selects(op, e.key, want[0], want[1], q.hasFrom, q.hasTo) {
			continue
		}
		more, err := p.emitRecord(v, e.rec, nil)
		// Positions in an index of the command's own are no cursors.
		p.known = false
		if err != nil {
			return err
		}
		if !more {
			a.logf("note: more objects follow, and --by has no cursors to go on from: raise --limit")
			return nil
		}
	}
	return nil
}

// selects reports whether op selects key, given the query's key (and, for
// a range, its end).
func selects(op strata.QueryOp, key, k, to index.Key, hasFrom, hasTo bool) bool {
	switch op {
	case strata.QueryList:
		return bytes.Equal(key, k)
	case strata.QueryPrefix:
		return bytes.HasPrefix(key, k)
	case strata.QueryLowerBound:
		return bytes.Compare(key, k) >= 0
	case strata.QueryRange:
		return (!hasFrom || bytes.Compare(key, k) >= 0) && (!hasTo || bytes.Compare(key, to) < 0)
	}
	return true
}

// keyText returns the text of the query's key (its first, for a range),
// nil if none was given.
func (q *queryFlags) keyText() *string {
	switch {
	case q.hasGet:
		return &q.get
	case q.hasPrefix:
		return &q.prefix
	case q.hasLower:
		return &q.lowerbound
	case q.hasFrom:
		return &q.from
	}
	return nil
}

// toText returns the text of a range's end, nil if none was given.
func (q *queryFlags) toText() *string {
	if q.hasTo {
		return &q.to
	}
	return nil
}
