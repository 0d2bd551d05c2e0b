package replicate

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The sequential specification the cluster's histories are checked
// against (linearizable_test.go): a map from a small set of keys to
// string values, "" for a key that holds no object, with four
// operations on one key each:
//
//	get     the key's value
//	put     sets the value
//	delete  removes the object ("")
//	cas     sets new if the value is old; else changes nothing, and
//	        reports the value it found
//
// Each operation names one key and the state of a key depends on its
// operations only, so the model partitions the history by key (a history
// is linearizable if and only if every key's is) and a partition's
// state is one value.
//
// An operation whose outcome is unknown (the write returned
// ErrAmbiguous) has an Unknown output and a return time of infinity
// (linUnknownReturn): porcupine may linearize it anywhere after its call,
// including after every other operation, which is the same as never
// taking effect. So the step applies it in full, and "it may or may not
// have happened" needs no nondeterminism in the model.

type linOpKind uint8

const (
	linGet linOpKind = iota
	linPut
	linDelete
	linCAS
)

func (k linOpKind) String() string {
	return [...]string{"get", "put", "delete", "cas"}[k]
}

// linInput is an operation as a client called it.
type linInput struct {
	Op  linOpKind
	Key uint64
	Val string // put's and cas's new value
	Old string // cas's expected value
}

// linOutput is what the operation returned.
type linOutput struct {
	// Val is get's value, and the value a cas that did not swap found.
	Val string
	// Swapped reports that a cas found Old and wrote Val.
	Swapped bool
	// Unknown: the write may or may not have taken effect.
	Unknown bool
}

// linUnknownReturn is the return time of an operation whose outcome is
// unknown: after everything.
const linUnknownReturn = math.MaxInt64

// linModel is the model for porcupine.
var linModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[uint64][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(linInput).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]uint64, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		parts := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, byKey[k])
		}
		return parts
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		v, in, out := state.(string), input.(linInput), output.(linOutput)
		switch in.Op {
		case linGet:
			return out.Val == v, v
		case linPut:
			return true, in.Val
		case linDelete:
			return true, ""
		case linCAS:
			switch {
			case out.Unknown:
				// Only a cas that chose to swap can be unknown (the
				// others are not recorded): if it applied, the table
				// was as it read it.
				if v == in.Old {
					return true, in.Val
				}
				return true, v
			case out.Swapped:
				return v == in.Old, in.Val
			default:
				return v != in.Old && out.Val == v, v
			}
		}
		return false, v
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		var s string
		switch in.Op {
		case linGet:
			s = fmt.Sprintf("get(%d) -> %q", in.Key, out.Val)
		case linPut:
			s = fmt.Sprintf("put(%d, %q)", in.Key, in.Val)
		case linDelete:
			s = fmt.Sprintf("delete(%d)", in.Key)
		case linCAS:
			s = fmt.Sprintf("cas(%d, %q -> %q)", in.Key, in.Old, in.Val)
			switch {
			case out.Unknown:
			case out.Swapped:
				s += " swapped"
			default:
				s += fmt.Sprintf(" found %q", out.Val)
			}
		}
		if out.Unknown {
			s += " ?"
		}
		return s
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%q", state.(string)) },
}

// linCheck checks history with porcupine (within timeout; 0: none) and
// fails the test if it is not linearizable, naming a file with
// porcupine's visualization of it.
func linCheck(t testing.TB, history []porcupine.Operation, timeout time.Duration) porcupine.CheckResult {
	t.Helper()
	res, info := porcupine.CheckOperationsVerbose(linModel, history, timeout)
	switch res {
	case porcupine.Illegal:
		f, err := os.CreateTemp("", "strata-replicate-lin-*.html")
		if err != nil {
			t.Fatalf("history of %d operations not linearizable; no file for the visualization: %v", len(history), err)
		}
		verr := porcupine.Visualize(linModel, info, f)
		if cerr := f.Close(); verr == nil {
			verr = cerr
		}
		t.Errorf("history of %d operations not linearizable: porcupine's visualization in %s (%v)", len(history), f.Name(), verr)
	case porcupine.Unknown:
		t.Errorf("the check of %d operations did not finish in %v", len(history), timeout)
	}
	return res
}

// linHistory builds a history by hand for the model's tests: each op is
// "client call return op key args", times in arbitrary units, "-" as the
// return of an unknown outcome.
func linHistory(t *testing.T, lines ...string) []porcupine.Operation {
	t.Helper()
	var h []porcupine.Operation
	for _, l := range lines {
		f := strings.Fields(l)
		var client int
		var call, ret int64
		var key uint64
		if _, err := fmt.Sscan(f[0], &client); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscan(f[1], &call); err != nil {
			t.Fatal(err)
		}
		var out linOutput
		if f[2] == "-" {
			ret, out.Unknown = linUnknownReturn, true
		} else if _, err := fmt.Sscan(f[2], &ret); err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Sscan(f[4], &key); err != nil {
			t.Fatal(err)
		}
		arg := func(i int) string {
			if i >= len(f) || f[i] == "_" {
				return ""
			}
			return f[i]
		}
		in := linInput{Key: key}
		switch f[3] {
		case "get":
			in.Op, out.Val = linGet, arg(5)
		case "put":
			in.Op, in.Val = linPut, arg(5)
		case "delete":
			in.Op = linDelete
		case "cas": // cas key old new swapped|found-value
			in.Op, in.Old, in.Val = linCAS, arg(5), arg(6)
			if r := arg(7); r == "swapped" {
				out.Swapped = true
			} else {
				out.Val = r
			}
		default:
			t.Fatalf("op %q", f[3])
		}
		h = append(h, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	}
	return h
}

// TestLinModelBites: the model accepts linearizable histories and refuses
// the ones that are not, with the faults the cluster could show (a stale
// read, a lost acknowledged write, a write that did not happen seen, an
// unknown write seen and then unseen, a cas that swapped a value that was
// not there): the checker is known to catch them.
func TestLinModelBites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		ok    bool
		lines []string
	}{
		{"sequential", true, []string{
			"0 0 1 put 1 x",
			"1 2 3 get 1 x",
			"0 4 5 cas 1 x y swapped",
			"1 6 7 cas 1 x z y",
			"0 8 9 delete 1",
			"1 10 11 get 1 _",
		}},
		{"concurrent read may see either", true, []string{
			"0 0 1 put 1 x",
			"0 2 10 put 1 y",
			"1 3 4 get 1 y",
			"2 5 6 get 1 y",
		}},
		{"stale read", false, []string{
			"0 0 1 put 1 x",
			"0 2 3 put 1 y",
			"1 4 5 get 1 x",
		}},
		{"read goes back", false, []string{
			"0 0 10 put 1 x",
			"1 1 2 get 1 x",
			"2 3 4 get 1 _",
		}},
		{"acknowledged write lost", false, []string{
			"0 0 1 put 1 x",
			"1 2 3 get 1 _",
		}},
		{"value from nowhere (a write reported as not made)", false, []string{
			"0 0 1 put 1 x",
			"1 2 3 get 1 y",
		}},
		{"unknown write never seen", true, []string{
			"0 0 1 put 1 x",
			"0 2 - put 1 y",
			"1 3 4 get 1 x",
			"1 5 6 get 1 x",
		}},
		{"unknown write seen later", true, []string{
			"0 0 1 put 1 x",
			"0 2 - put 1 y",
			"1 3 4 get 1 x",
			"1 50 60 get 1 y",
		}},
		{"unknown write seen, then unseen", false, []string{
			"0 0 1 put 1 x",
			"0 2 - put 1 y",
			"1 3 4 get 1 y",
			"1 5 6 get 1 x",
		}},
		{"unknown delete seen", true, []string{
			"0 0 1 put 1 x",
			"0 2 - delete 1",
			"1 3 4 get 1 _",
		}},
		{"cas swapped a value not there", false, []string{
			"0 0 1 put 1 x",
			"1 2 3 cas 1 y z swapped",
		}},
		{"cas found a value not there", false, []string{
			"0 0 1 put 1 x",
			"1 2 3 cas 1 y z w",
		}},
		{"cas failed though the value matched", false, []string{
			"0 0 1 put 1 x",
			"1 2 3 cas 1 x z x",
		}},
		{"two cas from one value both swapped", false, []string{
			"0 0 1 put 1 x",
			"1 2 5 cas 1 x y swapped",
			"2 2 5 cas 1 x z swapped",
		}},
		{"unknown cas that could not apply", false, []string{
			"0 0 1 put 1 x",
			"1 2 - cas 1 q z",
			"2 3 4 get 1 z",
		}},
		{"keys are independent", true, []string{
			"0 0 1 put 1 x",
			"1 2 3 get 2 _",
			"1 4 5 get 1 x",
		}},
		{"a fault on one key of two", false, []string{
			"0 0 1 put 1 x",
			"0 0 1 put 2 x",
			"1 2 3 get 2 x",
			"1 4 5 get 1 _",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := linHistory(t, tc.lines...)
			res, _ := porcupine.CheckOperationsVerbose(linModel, h, 10*time.Second)
			want := porcupine.Illegal
			if tc.ok {
				want = porcupine.Ok
			}
			if res != want {
				t.Errorf("check: %v, want %v", res, want)
			}
		})
	}
	// linCheck names the visualization of an illegal history.
	ft := &fakeTB{TB: t}
	linCheck(ft, linHistory(t, "0 0 1 put 1 x", "1 2 3 get 1 _"), 10*time.Second)
	if len(ft.errors) != 1 || !strings.Contains(ft.errors[0], ".html") {
		t.Fatalf("linCheck of an illegal history reported %q", ft.errors)
	}
	name := linVizPath(t, ft.errors[0])
	data, err := os.ReadFile(name)
	if err != nil || !strings.Contains(string(data), "put(1") {
		t.Errorf("visualization %s: %d bytes, %v", name, len(data), err)
	}
	_ = os.Remove(name)
}

// linVizPath returns the visualization's file that linCheck's error
// message names.
func linVizPath(t *testing.T, msg string) string {
	t.Helper()
	i, j := strings.Index(msg, " in "), strings.Index(msg, ".html")
	if i < 0 || j < i {
		t.Fatalf("no visualization named in %q", msg)
	}
	return msg[i+4 : j+5]
}

// fakeTB records a testing.TB's errors instead of failing.
type fakeTB struct {
	testing.TB
	errors []string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Errorf(format string, args ...any) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.TB.Fatalf(format, args...)
}
