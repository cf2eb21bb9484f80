// Package store holds what every storage adapter shares: the sentinel errors
// the domain ports promise. Adapters live in store/dynamo and store/embedded;
// the contract suite every adapter must pass lives in store/storetest.
package store

import "errors"

var (
	// ErrNotFound: no record with that key.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a conditional write failed (record exists, or its version moved).
	ErrConflict = errors.New("store: conflict")
)
