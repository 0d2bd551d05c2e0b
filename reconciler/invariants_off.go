//go:build !invariants

package reconciler

const invariants = false
