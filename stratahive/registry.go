package stratahive

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/index"
	"github.com/strata-db/strata/reconciler"
)

// Registry records what the cells of one hive declared on its database:
// the tables (Table, and stratahive/durable's tables) with the module
// that declared each, and the reconcilers (RegisterReconciler), which the
// reconciler/status command reports on. Cell provides it.
type Registry struct {
	mu          sync.Mutex
	tables      map[strata.TableName]string // table name -> declaring module
	reconcilers []*registeredReconciler
}

func newRegistry() *Registry {
	return &Registry{tables: make(map[strata.TableName]string)}
}

// ErrDuplicateTable: two cells of a hive declare tables of one name.
// The error names both modules; it wraps strata.ErrDuplicateTable.
var ErrDuplicateTable = fmt.Errorf("stratahive: %w", strata.ErrDuplicateTable)

// Declare records that module declares the table name, or fails with
// ErrDuplicateTable if a module (another or the same) did already. The
// table cells call it before they create their table; a package that
// builds table cells of its own calls it too.
func (r *Registry) Declare(name strata.TableName, module string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.tables[name]; ok {
		return fmt.Errorf("table %q declared by module %q is declared by module %q already: %w",
			name, module, prev, ErrDuplicateTable)
	}
	r.tables[name] = module
	return nil
}

// DeclaredBy returns the module that declared the table name ("" for the
// hive's root), and false if no cell declared it.
func (r *Registry) DeclaredBy(name strata.TableName) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.tables[name]
	return m, ok
}

// registeredReconciler is what the registry keeps of a reconciler: its
// name, its table and how to inspect it, without its object type.
type registeredReconciler struct {
	name    string
	module  string
	table   strata.TableMeta
	inspect func(index.Key) (reconciler.Inspection, bool)
	stats   func() reconciler.Stats
}

func (r *Registry) addReconciler(rr *registeredReconciler) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, other := range r.reconcilers {
		if other.name == rr.name {
			return fmt.Errorf("stratahive: reconciler %q of module %q: module %q has a reconciler of that name already: %w",
				rr.name, rr.module, other.module, ErrDuplicateReconciler)
		}
	}
	r.reconcilers = append(r.reconcilers, rr)
	return nil
}

// ErrDuplicateReconciler: two reconcilers of one hive have the same name
// (reconciler.WithName, by default the table's).
var ErrDuplicateReconciler = errors.New("reconciler name taken")

// Reconcilers returns the names of the registered reconcilers, sorted.
func (r *Registry) Reconcilers() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, len(r.reconcilers))
	for i, rr := range r.reconcilers {
		names[i] = rr.name
	}
	slices.Sort(names)
	return names
}

func (r *Registry) reconciler(name string) (*registeredReconciler, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rr := range r.reconcilers {
		if rr.name == name {
			return rr, nil
		}
	}
	names := make([]string, len(r.reconcilers))
	for i, rr := range r.reconcilers {
		names[i] = rr.name
	}
	slices.Sort(names)
	return nil, fmt.Errorf("reconciler %q (registered: %v): %w", name, names, ErrReconcilerNotFound)
}

// ErrReconcilerNotFound: reconciler/status names no registered
// reconciler.
var ErrReconcilerNotFound = errors.New("reconciler not found")
