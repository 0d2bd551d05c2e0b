package stratacli

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/strata-db/strata/index"
)

// Keys typed on the command line (--key-format).
//
// A store records, of each table, its codec, the codec's version and the
// object type's identity (persist.Schema): not its indexes' names or the
// kinds of their keys, and no secondary index at all. So a command that
// does not know a table's Go type cannot tell how a key typed as text is
// encoded: "42" is the string "42", or 42 as any of ten integer encodings.
// The user says it: --key-format names the kind of the key (string,
// uint64, addr, prefix, …, or "string,uint32" for a composite key), and the
// text is encoded by package index's parser of that kind, the one the
// table's index uses when its FromKey is index.String, index.Uint64, …
// The bytes are what the index would compute; a kind that is not the
// index's finds nothing, or other objects, which is why the command never
// guesses it.

// Key formats other than the kinds.
const (
	keyFormatText = "text" // parsed by the registered index
	keyFormatHex  = "hex"  // the key's bytes, in hexadecimal
)

// keyKinds are the kinds of key --key-format names, each with package
// index's parser of its text: the encodings of the index package's key
// functions of the same names.
var keyKinds = map[string]func(string) (index.Key, error){
	"string":  index.FromString,
	"bytes":   index.BytesString,
	"bool":    index.BoolString,
	"int":     index.IntString,
	"int8":    index.Int8String,
	"int16":   index.Int16String,
	"int32":   index.Int32String,
	"int64":   index.Int64String,
	"uint":    index.UintString,
	"uint8":   index.Uint8String,
	"uint16":  index.Uint16String,
	"uint32":  index.Uint32String,
	"uint64":  index.Uint64String,
	"float64": index.Float64String,
	"time":    index.TimeString,
	"addr":    index.NetIPAddrString,
	"prefix":  index.NetIPPrefixString,
}

// keyFormatters are the renderers of the kinds' keys as text, package
// index's, the inverses of keyKinds' parsers.
var keyFormatters = map[string]func(index.Key) (string, error){
	"string":  index.FormatString,
	"bytes":   index.FormatBytes,
	"bool":    index.FormatBool,
	"int":     index.FormatInt,
	"int8":    index.FormatInt8,
	"int16":   index.FormatInt16,
	"int32":   index.FormatInt32,
	"int64":   index.FormatInt64,
	"uint":    index.FormatUint,
	"uint8":   index.FormatUint8,
	"uint16":  index.FormatUint16,
	"uint32":  index.FormatUint32,
	"uint64":  index.FormatUint64,
	"float64": index.FormatFloat64,
	"time":    index.FormatTime,
	"addr":    index.FormatNetIPAddr,
	"prefix":  index.FormatNetIPPrefix,
}

// keyFormatter returns the renderer of keys of format (validated by
// checkKeyFormat), composite parts joined by sep; nil for text and hex.
func keyFormatter(format, sep string) func(index.Key) (string, error) {
	if format == keyFormatText || format == keyFormatHex {
		return nil
	}
	parts := strings.Split(format, ",")
	if len(parts) == 1 {
		return keyFormatters[format]
	}
	formatters := make([]func(index.Key) (string, error), len(parts))
	for i, p := range parts {
		formatters[i] = keyFormatters[p]
	}
	return index.CompositeFormatter(sep, formatters...)
}

// keyKindNames returns the kinds' names, sorted, for messages.
func keyKindNames() string {
	names := make([]string, 0, len(keyKinds))
	for n := range keyKinds {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// keyFormatHelp is the help of the --key-format flag.
const keyFormatHelp = "how keys are typed: text (parsed by the table's index: a registered type, or online), hex (the key's bytes), " +
	"or the key's kind: string, int64, uint32, addr, prefix, time, … (\"string,uint32\": a composite, parts joined by --key-sep)"

// keyParser returns the parser of keys typed in format (validated by
// parseKeyFormat) with composite parts joined by sep; nil for text.
func keyParser(format, sep string) func(string) (index.Key, error) {
	switch format {
	case keyFormatText:
		return nil
	case keyFormatHex:
		return func(s string) (index.Key, error) {
			k, err := hex.DecodeString(s)
			if err != nil {
				return nil, usagef("key %q: not hex: %v", s, err)
			}
			return k, nil
		}
	}
	parts := strings.Split(format, ",")
	if len(parts) == 1 {
		return keyKinds[format]
	}
	parsers := make([]func(string) (index.Key, error), len(parts))
	for i, p := range parts {
		parsers[i] = keyKinds[p]
	}
	return index.CompositeParser(sep, parsers...)
}

// checkKeyFormat checks --key-format and --key-sep.
func checkKeyFormat(format, sep string) error {
	if format == keyFormatText || format == keyFormatHex {
		return nil
	}
	parts := strings.Split(format, ",")
	for _, p := range parts {
		if _, ok := keyKinds[p]; !ok {
			return usagef("--key-format %q: %q is no kind of key; want text, hex, or kinds (a composite: joined by commas) of: %s", format, p, keyKindNames())
		}
	}
	if len(parts) > 1 && sep == "" {
		return usagef("--key-sep: a composite key's parts need a separator")
	}
	return nil
}

// keyKindError is the error of a key typed as text for a table whose type
// the command does not know: it says why the text cannot be read and how
// to give the key.
func keyKindError(table, indexName, text string) error {
	return &wrapped{err: ErrKeyKindUnknown, msg: fmt.Sprintf(
		"table %s: key %q typed as text, but this command does not know the table's type, and a store records no key kinds "+
			"(only each table's codec and type): say the key's kind with --key-format KIND (%s; kinds joined by commas for a "+
			"composite key, whose parts are joined by --key-sep), or give the key's bytes in hex with --key-format hex%s",
		table, text, keyKindNames(), onIndex(indexName))}
}

// onIndex names an index in a message, if one was given.
func onIndex(name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf(" (index %q)", name)
}

// secondaryError is the error of a query on an index other than the
// primary of a table whose type the command does not know.
func secondaryError(table, indexName, source string) error {
	return &wrapped{err: ErrIndexNotStored, msg: fmt.Sprintf(
		"table %s: a query on index %q needs the table's type: a %s holds each object under its primary key only; a "+
			"secondary index is computed from the objects by the application's index function (Go code), and a store does not "+
			"record index names either. Query the primary index (leave out --index; keys with --key-format KIND or hex), "+
			"the running application (--addr), or an application's own command that registers the table (stratacli.WithTable); "+
			"of a table stored as JSON, --by FIELD:KIND queries the keys of an object's field, computed as the objects are read",
		table, indexName, source)}
}
