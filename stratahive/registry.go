package stratahive

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	// names holds the names of the reconcilers, those being created
	// included (claimName), with their modules.
	names map[string]string
}

// NewRegistry returns an empty Registry. Cell provides one per hive; a
// program that builds the script commands without Cell (Commands,
// ScriptCommands, as statedb's ScriptCommands(db) did) makes its own, in
// which its table cells declare their tables (Declare) and
// RegisterReconciler its reconcilers, for the db and reconciler/status
// commands to list.
func NewRegistry() *Registry {
	return &Registry{tables: make(map[strata.TableName]string), names: make(map[string]string)}
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

// claimName reserves a name for a reconciler of table in module: name if
// named (ErrDuplicateReconciler if a reconciler of the hive has it),
// otherwise the first free of the table's name, the table's name and the
// module's, and the table's name and a number (deriveName).
func (r *Registry) claimName(name string, named bool, table strata.TableName, module string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !named {
		name = r.deriveName(table, module)
	} else if other, ok := r.names[name]; ok {
		return "", fmt.Errorf("stratahive: reconciler %q of module %q: module %q has a reconciler of that name already; "+
			"give one of them another, for instance reconciler.WithName(%q): %w",
			name, module, other, r.deriveName(name, module), ErrDuplicateReconciler)
	}
	r.names[name] = module
	return name, nil
}

// deriveName returns the first name no reconciler has of base, base and
// module (with its dots made dashes, the characters a hive job's name
// keeps), base-2, base-3, ...
func (r *Registry) deriveName(base, module string) string {
	if _, taken := r.names[base]; !taken {
		return base
	}
	if module != "" {
		name := base + "-" + strings.ReplaceAll(module, ".", "-")
		if _, taken := r.names[name]; !taken {
			return name
		}
	}
	for i := 2; ; i++ {
		name := base + "-" + strconv.Itoa(i)
		if _, taken := r.names[name]; !taken {
			return name
		}
	}
}

// releaseName gives back a name claimName reserved for a reconciler that
// was not created.
func (r *Registry) releaseName(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.names, name)
}

// addReconciler records a reconciler, whose name claimName reserved.
func (r *Registry) addReconciler(rr *registeredReconciler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reconcilers = append(r.reconcilers, rr)
}

// ErrDuplicateReconciler: two reconcilers of one hive were given the same
// name (reconciler.WithName). The error names both modules and a name
// that is free. Reconcilers given no name never clash: see
// RegisterReconciler.
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
