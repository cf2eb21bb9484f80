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
