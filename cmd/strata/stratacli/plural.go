package stratacli

import "strconv"

// count renders n of a thing whose name is singular: "1 table", "0
// tables", "2 objects". Every count in the command's messages goes
// through it, so that none says "1 arguments".
func count[N ~int | ~int64 | ~uint64](n N, singular string) string {
	s := strconv.FormatUint(uint64(n), 10)
	if n < 0 {
		s = strconv.FormatInt(int64(n), 10)
	}
	if n == 1 {
		return s + " " + singular
	}
	return s + " " + singular + "s"
}
