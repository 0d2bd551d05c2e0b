package strata

import "reflect"

// TableWritable is implemented by objects that show as rows of columns
// (cilium/statedb's interface of the same name, which statedb requires of
// every table's objects and Strata does not): the columns' names, the
// same for every object of a table, and the object's values for them.
// The header is asked of the object type's zero value (a pointer to a
// zero struct, for a table of pointers), so it must not depend on the
// object.
//
// Tools that show any table use it when the objects implement it: the
// db/... script commands of stratahive, the web inspector of package
// httpapi. Objects that do not implement it show as their JSON members
// there, or as YAML.
type TableWritable interface {
	// TableHeader returns the names of the columns.
	TableHeader() []string
	// TableRow returns the object's value of each column, as many as
	// TableHeader has names.
	TableRow() []string
}

// TableHeader returns the columns of the table's objects, as their type's
// TableHeader gives them (asked of the type's zero value), or nil if the
// type does not implement TableWritable or its TableHeader panics.
// statedb's AnyTable has the same method.
func (t AnyTable) TableHeader() (header []string) {
	typ := t.ObjectType()
	var zero reflect.Value
	if typ.Kind() == reflect.Pointer {
		zero = reflect.New(typ.Elem())
	} else {
		zero = reflect.New(typ).Elem()
	}
	w, ok := zero.Interface().(TableWritable)
	if !ok {
		return nil
	}
	defer func() {
		if recover() != nil {
			header = nil
		}
	}()
	return w.TableHeader()
}

// TableRow returns obj's row, as its TableRow gives it, or nil if obj
// does not implement TableWritable or its TableRow panics. A caller that
// lays rows under TableHeader checks that the lengths agree. statedb's
// AnyTable has the same method.
func (t AnyTable) TableRow(obj any) (row []string) {
	w, ok := obj.(TableWritable)
	if !ok {
		return nil
	}
	defer func() {
		if recover() != nil {
			row = nil
		}
	}()
	return w.TableRow()
}
