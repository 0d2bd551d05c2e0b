//go:build armbe || arm64be || m68k || mips || mips64 || mips64p32 || ppc || ppc64 || s390 || s390x || shbe || sparc || sparc64

package strata

// bigEndianNative returns the uint64 whose bytes in memory, in the
// machine's byte order, are v's big-endian encoding (index.Uint64(v)).
func bigEndianNative(v uint64) uint64 { return v }
