//go:build invariants

package part

// invariants turns on expensive self-checks: every commit validates the
// whole tree. Build with -tags invariants (tests do); never in production.
const invariants = true
