package main

import (
	spart "github.com/cilium/statedb/part"
	iradix "github.com/hashicorp/go-immutable-radix/v2"
	"github.com/strata-db/strata/part"
)

// Radix tree adapters. Each uses its tree's idiomatic API: a new tree, one
// transaction, Insert, Commit; Get on the committed tree; a full scan with
// the tree's own iteration (part: range over Tree.All; statedb part: its
// All(yield) method; iradix: Root().Iterator() and Next, which allocates
// one iterator per scan because iradix offers nothing else).
//
// Not identical: part and statedb's part copy the key on insert; iradix
// keeps the caller's slice. Commits: part Commit (closes replaced nodes'
// watch channels), statedb part CommitAndNotify (the same), iradix Commit
// (the same, but iradix only tracks channels it was asked to track).

type strataPart struct {
	tree part.Tree[int]
	txn  *part.Txn[int]
}

func newStrataPart() Radix { return &strataPart{tree: part.New[int]()} }

func (p *strataPart) Begin()                   { p.txn = part.New[int]().Txn() }
func (p *strataPart) Insert(k []byte, v int)   { p.txn.Insert(k, v) }
func (p *strataPart) Get(k []byte) (int, bool) { return p.tree.Get(k) }
func (p *strataPart) Commit() int              { p.tree, p.txn = p.txn.Commit(), nil; return p.tree.Len() }
func (p *strataPart) Iterate() (n, sum int) {
	for _, v := range p.tree.All() {
		n++
		sum += v
	}
	return n, sum
}

type statedbPart struct {
	tree spart.Tree[int]
	txn  *spart.Txn[int]
}

func newStatedbPart() Radix { return &statedbPart{tree: spart.New[int]()} }

func (p *statedbPart) Begin() {
	t := spart.New[int]()
	p.txn = t.Txn()
}
func (p *statedbPart) Insert(k []byte, v int)   { p.txn.Insert(k, v) }
func (p *statedbPart) Get(k []byte) (int, bool) { return p.tree.Get(k) }
func (p *statedbPart) Commit() int {
	p.tree, p.txn = p.txn.CommitAndNotify(), nil
	return p.tree.Len()
}
func (p *statedbPart) Iterate() (n, sum int) {
	for _, v := range p.tree.All {
		n++
		sum += v
	}
	return n, sum
}

type iradixTree struct {
	tree *iradix.Tree[int]
	txn  *iradix.Txn[int]
}

func newIradix() Radix { return &iradixTree{tree: iradix.New[int]()} }

func (p *iradixTree) Begin()                   { p.txn = iradix.New[int]().Txn() }
func (p *iradixTree) Insert(k []byte, v int)   { p.txn.Insert(k, v) }
func (p *iradixTree) Get(k []byte) (int, bool) { return p.tree.Get(k) }
func (p *iradixTree) Commit() int              { p.tree, p.txn = p.txn.Commit(), nil; return p.tree.Len() }
func (p *iradixTree) Iterate() (n, sum int) {
	it := p.tree.Root().Iterator()
	for _, v, ok := it.Next(); ok; _, v, ok = it.Next() {
		n++
		sum += v
	}
	return n, sum
}
