// Package recordupdates declares the record-updates bucket the embedded
// store still implements (shared/store/embedded/recordupdates.go); nothing
// writes to it. It goes with that bucket.
package recordupdates

import "context"

// Stored is one kept record update: its id and its body.
type Stored struct {
	ID   string
	Body []byte
}

// Store is the embedded store's record-updates bucket.
type Store interface {
	// PutRecordUpdate keeps body under id.
	PutRecordUpdate(ctx context.Context, id string, body []byte) error
	// DeleteRecordUpdate removes update id (absent: no error).
	DeleteRecordUpdate(ctx context.Context, id string) error
	// RecordUpdates returns every kept update in id order.
	RecordUpdates(ctx context.Context) ([]Stored, error)
}
