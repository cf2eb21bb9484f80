package webhooks

import (
	"slices"
	"strings"
)

// SortNewestFirst orders deliveries as ListDeliveries returns them:
// CreatedAt descending, then ID descending.
func SortNewestFirst(ds []Delivery) {
	slices.SortStableFunc(ds, func(a, b Delivery) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}

// NewestFirst sorts ds newest first (SortNewestFirst) and keeps the first
// limit of them (limit <= 0: all): the lists of the delivery stores.
func NewestFirst(ds []Delivery, limit int) []Delivery {
	SortNewestFirst(ds)
	if limit > 0 && len(ds) > limit {
		ds = ds[:limit]
	}
	return ds
}
