// Package storeerr holds the sentinel errors every store port promises, so
// the domain packages that declare the ports and the adapters that
// implement them (shared/store/dynamo, shared/store/embedded) share them
// without depending on each other. It imports nothing of the project.
package storeerr

import "errors"

var (
	// ErrNotFound: no record with that key.
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a conditional write failed (record exists, or its version moved).
	ErrConflict = errors.New("store: conflict")
	// ErrUnknownFormat: a stored record's format version is not one this
	// release reads (docs/operations.md, "Changing a stored format").
	ErrUnknownFormat = errors.New("store: unknown stored format")
)
