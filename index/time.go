package index

import (
	"encoding/binary"
	"time"
)

// unixToInternal is the number of seconds from January 1 of year 1 to
// January 1, 1970 UTC: time.Time counts its seconds from year 1.
const unixToInternal int64 = (1969*365 + 1969/4 - 1969/100 + 1969/400) * 24 * 60 * 60

// timeKeyLen is the length in bytes of every Time key.
const timeKeyLen = 12

// Time encodes t as 12 bytes: the seconds since January 1 of year 1 UTC
// as a sign-flipped big-endian int64 (see Int64), then the nanoseconds
// within the second as a big-endian uint32.
//
// Keys follow the order of time.Time.Compare between instants: the
// location and any monotonic clock reading are ignored, so two times
// that are Equal have the same key. (Compare itself uses the monotonic
// readings when both times carry one; strip them with t.Round(0) if that
// difference matters.) The order holds over the whole range time.Time
// can represent, including the zero Time, times before 1970 and years
// past 9999.
func Time(t time.Time) Key { return AppendTime(make(Key, 0, timeKeyLen), t) }

// AppendTime appends the Time encoding of t to dst.
func AppendTime(dst []byte, t time.Time) []byte {
	// t.Unix() is the seconds since year 1 minus unixToInternal, computed
	// with two's complement wrap-around for times near the ends of the
	// range; adding the constant back (wrapping the same way) recovers
	// exactly the seconds that Time.Compare compares.
	sec := t.Unix() + unixToInternal
	dst = binary.BigEndian.AppendUint64(dst, uint64(sec)^(1<<63))
	return binary.BigEndian.AppendUint32(dst, uint32(t.Nanosecond()))
}
