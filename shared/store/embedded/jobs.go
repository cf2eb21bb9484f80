package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/yp/paysvc/shared/queue/localqueue"
)

// The local delivery queue's jobs (package localqueue) live in this file,
// so queued deliveries survive a restart: live jobs are ordered by due time
// in queue_jobs, dead letters kept in queue_dead, and queue_job_index maps
// a job id to where it is.

var _ localqueue.JobStore = (*Store)(nil)

// PutJob creates or replaces job j.ID, live or dead.
func (s *Store) PutJob(ctx context.Context, j localqueue.StoredJob) error {
	if j.ID == "" {
		return fmt.Errorf("embedded: put job: %w", errEmpty("id"))
	}
	j.Due, j.CreatedAt = j.Due.UTC(), j.CreatedAt.UTC()
	err := s.update(ctx, func(tx *bolt.Tx) error { return putJob(tx, j) })
	return wrapErr(err, "put job %q", j.ID)
}

// putJob is PutJob in tx (times in UTC).
func putJob(tx *bolt.Tx, j localqueue.StoredJob) error {
	jobs, dead, index, err := jobBuckets(tx)
	if err != nil {
		return err
	}
	if err := removeJob(jobs, dead, index, j.ID); err != nil {
		return err
	}
	if j.Dead {
		if err := index.Put([]byte(j.ID), []byte(deadMarker)); err != nil {
			return err
		}
		return putJSON(dead, []byte(j.ID), j)
	}
	key := compositeKey(timeKey(j.Due), j.ID)
	if err := index.Put([]byte(j.ID), key); err != nil {
		return err
	}
	return putJSON(jobs, key, j)
}

// DeleteJob removes job id, live or dead (absent: nothing to do).
func (s *Store) DeleteJob(ctx context.Context, id string) error {
	err := s.update(ctx, func(tx *bolt.Tx) error {
		jobs, dead, index, err := jobBuckets(tx)
		if err != nil {
			return err
		}
		return removeJob(jobs, dead, index, id)
	})
	return wrapErr(err, "delete job %q", id)
}

// jobs returns the jobs of bucket bkt in key order, at most limit (<= 0:
// all), up to the first that past says is past the end (nil: none is);
// errors name what.
func (s *Store) jobs(ctx context.Context, bkt string, limit int, past func(localqueue.StoredJob) bool, what string) ([]localqueue.StoredJob, error) {
	out := []localqueue.StoredJob{}
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bkt)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil && (limit <= 0 || len(out) < limit); k, v = c.Next() {
			var j localqueue.StoredJob
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("decode %q: %w", k, err)
			}
			if past != nil && past(j) {
				break
			}
			out = append(out, j)
		}
		return nil
	})
	if err != nil {
		return nil, wrapErr(err, what)
	}
	return out, nil
}

// DueJobs returns live jobs due at or before now, earliest first.
func (s *Store) DueJobs(ctx context.Context, now time.Time, limit int) ([]localqueue.StoredJob, error) {
	return s.jobs(ctx, bktQueueJobs, limit, func(j localqueue.StoredJob) bool { return j.Due.After(now) }, "due jobs")
}

// NextDue returns the due time of the earliest live job due after after.
func (s *Store) NextDue(ctx context.Context, after time.Time) (time.Time, bool, error) {
	var due time.Time
	var ok bool
	err := s.view(ctx, func(tx *bolt.Tx) error {
		b := readBucket(tx, bktQueueJobs)
		if b == nil {
			return nil
		}
		k, v := b.Cursor().Seek([]byte(compositeKey(timeKey(after.Add(time.Nanosecond)), "")))
		if k == nil {
			return nil
		}
		var j localqueue.StoredJob
		if err := json.Unmarshal(v, &j); err != nil {
			return fmt.Errorf("decode %q: %w", k, err)
		}
		due, ok = j.Due, true
		return nil
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("embedded: next due job: %w", err)
	}
	return due, ok, nil
}

// DeadJobs returns dead letters in id order.
func (s *Store) DeadJobs(ctx context.Context, limit int) ([]localqueue.StoredJob, error) {
	return s.jobs(ctx, bktQueueDead, limit, nil, "dead jobs")
}

// jobBuckets returns the queue's buckets, creating them if needed.
func jobBuckets(tx *bolt.Tx) (jobs, dead, index *bolt.Bucket, err error) {
	if jobs, err = writeBucket(tx, bktQueueJobs); err != nil {
		return
	}
	if dead, err = writeBucket(tx, bktQueueDead); err != nil {
		return
	}
	index, err = writeBucket(tx, bktQueueJobIndex)
	return
}

// removeJob deletes job id from wherever it is.
func removeJob(jobs, dead, index *bolt.Bucket, id string) error {
	at := index.Get([]byte(id))
	if at == nil {
		return nil
	}
	var err error
	if string(at) == deadMarker {
		err = dead.Delete([]byte(id))
	} else {
		err = jobs.Delete(append([]byte(nil), at...))
	}
	if err != nil {
		return err
	}
	return index.Delete([]byte(id))
}
