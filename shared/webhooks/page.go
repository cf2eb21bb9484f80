package webhooks

import "time"

// DeliveryCursor is the position of a delivery in a merchant's list
// (newest first: CreatedAt, then ID, both descending; SortNewestFirst).
type DeliveryCursor struct {
	CreatedAt time.Time
	ID        string
}

// Before reports whether d comes after the cursor position in the
// newest-first order.
func (c DeliveryCursor) Before(d Delivery) bool {
	if x := d.CreatedAt.Compare(c.CreatedAt); x != 0 {
		return x < 0
	}
	return d.ID < c.ID
}

// DeliveryQuery selects a page of a merchant's deliveries.
type DeliveryQuery struct {
	Status Status // "" = every status
	Limit  int    // at most this many (> 0)
	After  *DeliveryCursor
}
