// Package utc puts the times of records the adapters still store as the
// domain's structs (notification events, webhook deliveries) in UTC.
package utc

import (
	"time"
)

// Ptr returns *t in UTC (nil stays nil).
func Ptr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
