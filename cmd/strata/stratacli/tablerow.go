package stratacli

import "encoding/json"

// tableObject is the "object" field of a row whose object's type
// implements strata.TableWritable (statedb's convention): its JSON, which
// every format but the table shows, and its TableHeader and TableRow,
// which the table shows as the object's columns, as the db/... script
// commands and the web inspector do. Only a decoded object (a table whose
// type the application registered) has them; others' columns are their
// JSON members (package columns).
type tableObject struct {
	raw    json.RawMessage
	header []string
	row    []string
}

// objectValue returns the "object" field of an object whose JSON is raw,
// given its table's TableHeader and its TableRow (strata.AnyTable's, nil
// where the type does not implement strata.TableWritable): a tableObject
// if the row has a value for each column of the header, else raw.
func objectValue(header, row []string, raw json.RawMessage) any {
	if header == nil || len(row) != len(header) {
		return raw
	}
	return tableObject{raw: raw, header: header, row: row}
}
