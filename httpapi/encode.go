package httpapi

import (
	"strconv"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/wirejson"
)

// appendObject appends the JSON of an Object (kind "") or of an Event of
// an object: the fields in Object's and Event's order, the object's JSON
// as it is, or, if encoding it failed, null and the error; and an
// Event's row, if it has one (Event.Row).
func appendObject(dst []byte, kind EventKind, rev strata.Revision, key string, obj []byte, encErr error, row []string) []byte {
	dst = append(dst, '{')
	if kind != "" {
		dst = append(dst, `"kind":"`...)
		dst = append(dst, kind...)
		dst = append(dst, `",`...)
	}
	dst = append(dst, `"rev":`...)
	dst = strconv.AppendUint(dst, rev, 10)
	dst = append(dst, `,"key":`...)
	dst = wirejson.AppendString(dst, key)
	dst = append(dst, `,"obj":`...)
	if encErr != nil {
		dst = append(dst, `null,"error":`...)
		dst = wirejson.AppendString(dst, encErr.Error())
	} else {
		dst = append(dst, obj...)
	}
	if row != nil {
		dst = append(dst, `,"row":[`...)
		for i, cell := range row {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = wirejson.AppendString(dst, cell)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendBookmark appends the JSON of a bookmark Event.
func appendBookmark(dst []byte, rev strata.Revision) []byte {
	dst = append(dst, `{"kind":"bookmark","rev":`...)
	dst = strconv.AppendUint(dst, rev, 10)
	return append(dst, '}')
}
