//go:build !invariants

package strata

const invariants = false
