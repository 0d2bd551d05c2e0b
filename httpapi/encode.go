package httpapi

import (
	"strconv"

	"github.com/strata-db/strata"
	"github.com/strata-db/strata/internal/wirejson"
)

// appendObject appends the JSON of an Object (kind "") or of an Event of
// an object: the fields in Object's and Event's order, the object's JSON
// as it is, or, if encoding it failed, null and the error.
func appendObject(dst []byte, kind EventKind, rev strata.Revision, key string, obj []byte, encErr error) []byte {
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
	return append(dst, '}')
}

// appendBookmark appends the JSON of a bookmark Event.
func appendBookmark(dst []byte, rev strata.Revision) []byte {
	dst = append(dst, `{"kind":"bookmark","rev":`...)
	dst = strconv.AppendUint(dst, rev, 10)
	return append(dst, '}')
}
