//go:build !invariants

package part

const invariants = false
