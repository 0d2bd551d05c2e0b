// Package part implements a persistent adaptive radix tree.
package part
