// Package commitcheck defines an analyzer that reports write transactions
// of github.com/strata-db/strata whose Commit error is not checked.
//
// WriteTxn.Commit returns the new snapshot and an error. The error is not
// a formality: a commit that fails (the persistence layer could not write
// the changes, or the transaction was already closed) publishes nothing,
// and the database is as it was before the transaction. A program that
// drops the error goes on as if its writes had happened. cilium/statedb's
// Commit returned only the snapshot, so code moved from statedb calls it
// as a statement, and compiles.
//
// The analyzer reports a call of Commit on a strata.WriteTxn, or on any
// type that implements it (an interface embedding it, a struct wrapping
// one), whose error is dropped:
//
//	wtxn.Commit()              // a statement
//	defer wtxn.Commit()        // the deferred call's results are discarded
//	go wtxn.Commit()           // and so are a go statement's
//	rtxn, _ := wtxn.Commit()   // the error assigned to the blank identifier
//	_, _ = wtxn.Commit()
//	var rtxn, _ = wtxn.Commit()
//
// Calls are matched by type, not by name: Commit methods of other types
// are never reported. That includes part.Txn's Commit and CommitOnly,
// which return the new tree and no error (there is nothing to check, and
// a dropped tree is a different mistake), and JournalBatch.Commit, which
// the database calls itself; a general checker such as errcheck covers
// errors of every kind. A Commit taken as a method value (f :=
// wtxn.Commit) is not followed to its calls.
//
// Run it on its own:
//
//	go install github.com/strata-db/strata/cmd/commitcheck@latest
//	commitcheck ./...
//
// or add Analyzer to a multichecker, or to a linter that loads analyzers.
package commitcheck

import (
	"go/ast"
	"go/types"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
)

// strataPath is the import path of the package that declares WriteTxn.
const strataPath = "github.com/strata-db/strata"

// Analyzer reports calls of strata's WriteTxn.Commit whose error result
// is dropped: used as a statement, deferred, started as a goroutine, or
// assigned to the blank identifier.
var Analyzer = &analysis.Analyzer{
	Name:     "commitcheck",
	Doc:      "report strata WriteTxn.Commit calls whose error is not checked",
	URL:      "https://pkg.go.dev/github.com/strata-db/strata/cmd/commitcheck/commitcheck",
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

func run(pass *analysis.Pass) (any, error) {
	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	for cur := range insp.Root().Preorder((*ast.CallExpr)(nil)) {
		call := cur.Node().(*ast.CallExpr)
		if !isWriteTxnCommit(pass.TypesInfo, call) {
			continue
		}
		if how := dropped(cur); how != "" {
			pass.Reportf(call.Pos(), "the error of WriteTxn.Commit is not checked (%s): a failed commit publishes nothing", how)
		}
	}
	return nil, nil
}

// isWriteTxnCommit reports whether call calls the Commit method of
// strata.WriteTxn or of a type that implements it, as a method
// (wtxn.Commit()) or a method expression (strata.WriteTxn.Commit(wtxn)).
func isWriteTxnCommit(info *types.Info, call *ast.CallExpr) bool {
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Commit" {
		return false
	}
	selection := info.Selections[sel]
	if selection == nil || selection.Kind() == types.FieldVal {
		return false
	}
	fn, ok := selection.Obj().(*types.Func)
	if !ok {
		return false
	}
	writeTxn := writeTxnOf(fn)
	if writeTxn == nil {
		return false
	}
	recv := selection.Recv()
	return types.Implements(recv, writeTxn) ||
		!types.IsInterface(recv) && types.Implements(types.NewPointer(recv), writeTxn)
}

// writeTxnOf returns strata's WriteTxn interface if fn has the signature
// of its Commit, func() (strata.ReadTxn, error), and nil otherwise. The
// interface is found through the ReadTxn of the signature, so a package
// that holds a WriteTxn without importing strata itself is checked too.
func writeTxnOf(fn *types.Func) *types.Interface {
	sig := fn.Signature()
	if sig.Params().Len() != 0 || sig.Results().Len() != 2 {
		return nil
	}
	if !types.Identical(sig.Results().At(1).Type(), types.Universe.Lookup("error").Type()) {
		return nil
	}
	readTxn, ok := types.Unalias(sig.Results().At(0).Type()).(*types.Named)
	if !ok {
		return nil
	}
	pkg := readTxn.Obj().Pkg()
	if pkg == nil || pkg.Path() != strataPath || readTxn.Obj().Name() != "ReadTxn" {
		return nil
	}
	obj, ok := pkg.Scope().Lookup("WriteTxn").(*types.TypeName)
	if !ok {
		return nil
	}
	iface, _ := obj.Type().Underlying().(*types.Interface)
	return iface
}

// dropped says how the results of the call at cur are dropped, or
// returns "" if its error reaches the program.
func dropped(cur inspector.Cursor) string {
	call := cur.Node()
	parent := cur.Parent()
	for {
		if _, ok := parent.Node().(*ast.ParenExpr); !ok {
			break
		}
		call = parent.Node()
		parent = parent.Parent()
	}
	switch p := parent.Node().(type) {
	case *ast.ExprStmt:
		return "its results are discarded"
	case *ast.DeferStmt:
		return "a deferred call discards its results"
	case *ast.GoStmt:
		return "a go statement discards its results"
	case *ast.AssignStmt:
		if len(p.Rhs) == 1 && p.Rhs[0] == call && len(p.Lhs) == 2 && isBlank(p.Lhs[1]) {
			return "assigned to _"
		}
	case *ast.ValueSpec:
		if len(p.Values) == 1 && p.Values[0] == call && len(p.Names) == 2 && isBlank(p.Names[1]) {
			return "assigned to _"
		}
	}
	return ""
}

func isBlank(e ast.Expr) bool {
	id, ok := ast.Unparen(e).(*ast.Ident)
	return ok && id.Name == "_"
}
