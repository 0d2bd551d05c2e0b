//go:build invariants

package reconciler

// invariants turns on expensive self-checks: every round of the loop
// checks the state's bookkeeping (state.check). Build with -tags
// invariants (make unit does); never in production.
const invariants = true
