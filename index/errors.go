package index

import "errors"

// Errors of this package. They are returned wrapped with details; test for
// them with errors.Is.
var (
	// ErrMalformedKey: a key is not one the encoder in question could have
	// made (UnescapeNext, SplitComposite and the Decode functions).
	ErrMalformedKey = errors.New("index: malformed key")
	// ErrParseKey: text given to a parser (the String functions, such as
	// Uint64String, and CompositeParser) does not denote a value of the
	// parser's type.
	ErrParseKey = errors.New("index: cannot parse key")
	// ErrNoTextForm: a well-formed key has no text that its parser reads
	// back to the same key (the Format functions and CompositeFormatter),
	// such as a time after year 9999, an invalid netip.Prefix that is not
	// the zero Prefix, or a composite part whose text holds the separator.
	ErrNoTextForm = errors.New("index: key has no text form")
)
