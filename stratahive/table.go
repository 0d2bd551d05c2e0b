package stratahive

import (
	"github.com/cilium/hive/cell"

	"github.com/strata-db/strata"
)

// Table declares a table of Obj named name, with the given indexes, as a
// cell: the one line
//
//	stratahive.Table("hosts", hostByName, hostByZone)
//
// creates the table with the hive's database when the hive is built, and
// provides it to every cell as both strata.RWTable[Obj] and
// strata.Table[Obj]. The table is created even if no cell asks for it, in
// the order the cells are declared.
//
// Two cells declaring tables of one name fail the hive's construction
// (hive.Populate, and so Start) with ErrDuplicateTable, naming both
// modules. Two cells declaring tables of one object type fail earlier, in
// hive.New, with the dependency injector's "already provided" error:
// wrap the object type in a type of its own for a second table.
func Table[Obj any](name strata.TableName, primary strata.Indexer[Obj], secondary ...strata.Indexer[Obj]) cell.Cell {
	return cell.Group(
		cell.Provide(func(p TableParams) (strata.RWTable[Obj], strata.Table[Obj], error) {
			t, err := NewTable(p, name, primary, secondary...)
			if err != nil {
				return nil, nil, err
			}
			return t, t, nil
		}),
		cell.Invoke(func(strata.RWTable[Obj]) {}),
	)
}

// TableParams are what a table cell needs from the hive.
type TableParams struct {
	cell.In

	DB       *strata.DB
	Registry *Registry
	ModuleID cell.FullModuleID
}

// NewTable declares the table in p's registry (ErrDuplicateTable if a
// cell declared that name already) and creates it with p's database, as
// strata.NewTable does (whose errors it returns). It is what Table does,
// for packages that build table cells of their own.
func NewTable[Obj any](p TableParams, name strata.TableName, primary strata.Indexer[Obj], secondary ...strata.Indexer[Obj]) (strata.RWTable[Obj], error) {
	if err := p.Registry.Declare(name, p.ModuleID.String()); err != nil {
		return nil, err
	}
	return strata.NewTable(p.DB, name, primary, secondary...)
}
