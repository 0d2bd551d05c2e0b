package strata

import "github.com/strata-db/strata/index"

// What inspection tools (an HTTP API, a web inspector) read of a table of
// unknown type beyond its objects: the primary key of an object, to name
// it. (AnyTable.FeedStats, in anyfeeds.go, describes its change feeds.)

// PrimaryKey returns the primary key of obj, which must be of the table's
// type: the key that names the object in the table's primary index (render
// it with KeyString("", key)). The error wraps ErrObjectType for an object
// of another type, or ErrPrimaryKey if the primary index does not give it
// exactly one key.
func (t AnyTable) PrimaryKey(obj any) (index.Key, error) {
	return t.Meta.untyped().anyPrimaryKey(obj)
}

func (t *table[Obj]) anyPrimaryKey(obj any) (index.Key, error) {
	o, ok := obj.(Obj)
	if !ok {
		return nil, t.objectTypeError(obj)
	}
	return t.primaryKey(nil, o)
}
