package stratahive

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"github.com/cilium/hive/script"
	"gopkg.in/yaml.v3"

	"github.com/strata-db/strata"
)

func writeCmd(db *strata.DB, insert bool) script.Cmd {
	name, summary, verb := "db/insert", "Insert objects into a table from YAML files", "inserted"
	if !insert {
		name, summary, verb = "db/delete", "Delete objects from a table, given by YAML files", "deleted"
	}
	return script.Command(
		script.CmdUsage{
			Summary: summary,
			Args:    "table file...",
			Detail: []string{
				"Each file holds one or more YAML documents (separated by ---), each",
				"an object of the table's type; fields the type does not have are",
				"errors. All the objects are " + verb + " in one transaction: if a",
				"file is missing or does not decode, or a write fails, nothing is.",
			},
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) < 2 {
				return nil, fmt.Errorf("%w: %s takes a table and one or more files", ErrBadInput, name)
			}
			t, err := lookupTable(db, args[0])
			if err != nil {
				return nil, err
			}
			var objs []any
			for _, file := range args[1:] {
				data, err := os.ReadFile(s.Path(file))
				if err != nil {
					return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
				}
				got, err := decodeYAMLObjects(t, data)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", file, err)
				}
				objs = append(objs, got...)
			}
			wtxn := db.WriteTxn(t.Meta)
			defer wtxn.Abort()
			for i, obj := range objs {
				if insert {
					_, _, err = t.Insert(wtxn, obj)
				} else {
					_, _, err = t.Delete(wtxn, obj)
				}
				if err != nil {
					return nil, fmt.Errorf("object %d: %w", i+1, err)
				}
			}
			if _, err := wtxn.Commit(); err != nil {
				return nil, err
			}
			return nil, nil
		},
	)
}

// decodeYAMLObjects decodes every YAML document of data into an object of
// t's type, refusing fields the type does not have.
func decodeYAMLObjects(t strata.AnyTable, data []byte) ([]any, error) {
	typ := t.ObjectType()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var objs []any
	for n := 1; ; n++ {
		v := reflect.New(typ)
		err := dec.Decode(v.Interface())
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: document %d does not decode as %v: %w", ErrBadInput, n, typ, err)
		}
		if typ.Kind() == reflect.Pointer && v.Elem().IsNil() {
			return nil, fmt.Errorf("%w: document %d is empty", ErrBadInput, n)
		}
		objs = append(objs, v.Elem().Interface())
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%w: no YAML document", ErrBadInput)
	}
	return objs, nil
}
