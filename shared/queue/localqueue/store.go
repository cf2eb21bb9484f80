package localqueue

import (
	"context"
	"time"

	"github.com/yp/paysvc/shared/queue"
)

// StoredJob is one job of the local queue as persisted.
type StoredJob struct {
	ID        string    `json:"id"`
	Job       queue.Job `json:"job"`
	Due       time.Time `json:"due"`            // when it may run
	Dead      bool      `json:"dead,omitempty"` // in the dead-letter queue
	CreatedAt time.Time `json:"createdAt"`
}

// JobStore is the persistence port of the local queue (implemented by the
// embedded store). Every method is atomic.
type JobStore interface {
	// PutJob creates or replaces the job with j.ID, live or dead.
	PutJob(ctx context.Context, j StoredJob) error
	// DeleteJob removes job id, live or dead; a missing job is no error.
	DeleteJob(ctx context.Context, id string) error
	// DueJobs returns live jobs due at or before now, earliest first (then
	// by ID), at most limit (limit <= 0: all).
	DueJobs(ctx context.Context, now time.Time, limit int) ([]StoredJob, error)
	// NextDue returns the due time of the earliest live job due after
	// after; ok is false when there is none.
	NextDue(ctx context.Context, after time.Time) (due time.Time, ok bool, err error)
	// DeadJobs returns dead jobs in ID order, at most limit (limit <= 0: all).
	DeadJobs(ctx context.Context, limit int) ([]StoredJob, error)
}
