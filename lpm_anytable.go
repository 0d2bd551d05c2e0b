package strata

import (
	"bytes"
	"iter"

	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/part"
)

// anyReadLPM is AnyTable's Read of the queries an LPM index answers in its
// own way: QueryList of a Containing key (an address typed as text), and
// QueryPrefix, the prefixes within a prefix. done is false for the other
// queries, which read as on any index. (AnyTable.Read has refused
// Containing keys with the other ops.)
func (t *table[Obj]) anyReadLPM(txn ReadTxn, pos int, q AnyQuery, watch bool) (seq iter.Seq[AnyObject], ch <-chan struct{}, done bool) {
	ix := &t.indexes[pos]
	st := t.read(txn)
	tree := st.tree(pos)
	switch {
	case q.Op == QueryList && isContainingKey(q.Key):
		if watch {
			ch = lpmFamilyWatch(tree, q.Key)
		}
		return anyContaining(tree, q, !ix.unique, st.dedup(pos)), ch, true
	case q.Op == QueryPrefix:
		upper, common, ok := lpmWithin(q.Key)
		if !ok {
			if watch {
				ch = tree.RootWatch()
			}
			return func(func(AnyObject) bool) {}, ch, true
		}
		// The prefixes within q's are one range of keys, which ends
		// right after those of its last subnet: every key above it is
		// above upper 0x00 too (the keys of a family have one length).
		r := q
		r.Op, r.To = QueryRange, append(append([]byte(nil), upper.bytes()...), 0x00)
		seq, _ = t.anyRead(txn, pos, r, false)
		if watch {
			p := q.Key[:common]
			if !ix.unique {
				p = index.AppendEscapedPrefix(nil, p)
			}
			ch = tree.WatchPrefix(p)
		}
		return seq, ch, true
	}
	return nil, nil, false
}

// anyContaining reads the Containing query q, with its cursor: the
// results come the longest prefix first and each prefix's entries in key
// order, so a result is after the cursor's if its prefix is shorter, or
// has the cursor's length (then it is the same prefix: only one of each
// length contains the target) and a greater entry key. A cursor that is no
// entry of an LPM index has nothing after it.
func anyContaining[Obj any](tree part.Tree[object[Obj]], q AnyQuery, nonUnique, dedup bool) iter.Seq[AnyObject] {
	target, ok := containingTarget(q.Key)
	afterLen := -1
	if q.After != nil {
		afterLen = lpmEntryLen(q.After, nonUnique)
		ok = ok && afterLen >= 0
	}
	return func(yield func(AnyObject) bool) {
		if !ok {
			return
		}
		var seen map[Revision]struct{}
		lpmSearch(tree, target, nonUnique, func(e []byte, l int, o object[Obj]) bool {
			if q.After != nil {
				if l > afterLen || l == afterLen && bytes.Compare(e, q.After) <= 0 {
					return true
				}
			}
			if dedup {
				if _, dup := seen[o.rev]; dup {
					return true
				}
				if seen == nil {
					seen = map[Revision]struct{}{}
				}
				seen[o.rev] = struct{}{}
			}
			return yield(AnyObject{Object: o.obj, Revision: o.rev, Cursor: e})
		})
	}
}

// lpmEntryLen returns the prefix length of the entry e of an LPM index,
// or -1 if e is not one.
func lpmEntryLen(e []byte, nonUnique bool) int {
	k := e
	if nonUnique {
		var kb [lpmLen6]byte
		var ok bool
		if k, ok = lpmEntryKey(&kb, e); !ok {
			return -1
		}
	}
	tag, _, n, ok := lpmDecode(k)
	if !ok || tag&lpmContaining != 0 {
		return -1
	}
	return n
}
