package reconciler

import (
	"errors"
	"expvar"
	"testing"
	"time"
)

// TestStatedbExpVarMetrics: ExpVarMetrics keeps statedb's eight maps,
// keyed "module/name" (ModuleReconciler), the module alone for a
// reconciler registered without a name, and the name alone (Reconciler);
// publishing it twice is an error, not a panic.
func TestStatedbExpVarMetrics(t *testing.T) {
	m := NewUnpublishedExpVarMetrics()
	if m.Err() != nil {
		t.Fatal(m.Err())
	}
	bad := m.ModuleReconciler("test", "bad")
	unnamed := m.ModuleReconciler("test", "")
	plain := m.Reconciler("plain")

	bad.Operation(OpUpdate, OutcomeError, 2*time.Second)
	bad.Operation(OpUpdate, OutcomeOK, time.Second)
	bad.Operation(OpDelete, OutcomeTerminal, time.Second/2)
	bad.Progress(Stats{Failing: 2})
	bad.Progress(Stats{Failing: 1})
	unnamed.Progress(Stats{})
	unnamed.Prune(OutcomeError, time.Second)
	unnamed.Prune(OutcomeOK, time.Second)
	plain.Prune(OutcomeRefused, time.Second)

	for _, c := range []struct {
		m    *expvar.Map
		key  string
		want string
	}{
		{m.ReconciliationCountVar, "test/bad", "2"},
		{m.ReconciliationTotalErrorsVar, "test/bad", "2"},
		{m.ReconciliationCurrentErrorsVar, "test/bad", "1"},
		{m.ReconciliationDurationVar, "test/bad/update", "3"},
		{m.ReconciliationDurationVar, "test/bad/delete", "0.5"},
		{m.ReconciliationCountVar, "test", "1"},
		{m.ReconciliationTotalErrorsVar, "test", "0"},
		{m.ReconciliationCurrentErrorsVar, "test", "0"},
		{m.PruneCountVar, "test", "2"},
		{m.PruneTotalErrorsVar, "test", "1"},
		{m.PruneCurrentErrorsVar, "test", "0"},
		{m.PruneDurationVar, "test", "2"},
		{m.PruneCurrentErrorsVar, "plain", "1"},
	} {
		v := c.m.Get(c.key)
		if v == nil || v.String() != c.want {
			t.Errorf("%s[%q] = %v, want %s", mapName(m, c.m), c.key, v, c.want)
		}
	}
	if v := m.PruneCountVar.Get("test/bad"); v != nil {
		t.Errorf("prune_count[test/bad] = %v, want none: it never pruned", v)
	}
	if n := m.Map().Get("reconciliation_count"); n != m.ReconciliationCountVar {
		t.Errorf("Map()[reconciliation_count] is not ReconciliationCountVar")
	}

	// The first call of the process publishes (a test run with -count=2
	// has published already); every later one is refused.
	first := NewExpVarMetrics()
	second := NewExpVarMetrics()
	if !errors.Is(second.Err(), ErrPublished) {
		t.Fatalf("NewExpVarMetrics again: %v, want ErrPublished", second.Err())
	}
	if first.Err() == nil && expvar.Get("reconciliation_count") != first.ReconciliationCountVar {
		t.Fatal("reconciliation_count is not published as statedb publishes it")
	}
}

// mapName returns the name under which m holds sub.
func mapName(m *ExpVarMetrics, sub *expvar.Map) string {
	name := "?"
	m.Map().Do(func(kv expvar.KeyValue) {
		if kv.Value == sub {
			name = kv.Key
		}
	})
	return name
}
