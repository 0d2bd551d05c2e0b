//go:build invariants

package strata

// invariants turns on expensive self-checks: every commit and abort checks
// the table's change log (changelog_check.go). Build with -tags invariants
// (the tests do); never in production.
const invariants = true
