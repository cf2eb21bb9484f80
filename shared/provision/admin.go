package provision

import (
	"context"

	"github.com/yp/paysvc/shared/tenant"
)

// This file holds what the admin CLI (package admincli) needs beyond the
// create/put operations: checking identifiers up front and switching
// subscriptions on and off.

// ValidID reports whether id is a valid merchant, site or subscription
// identifier (1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'); what names
// it in the error.
func ValidID(what, id string) error { return validID(what, id) }

// SetSubscriptionEnabled enables or disables a merchant's webhook
// subscription and returns it. Disabling records reason (shown to
// operators); enabling clears it. Secrets are left as they are. It returns
// storeerr.ErrNotFound when the merchant has no such subscription.
func (p *Provisioner) SetSubscriptionEnabled(ctx context.Context, merchantID, subID string, enabled bool, reason string) (tenant.Subscription, error) {
	s, err := p.Store.GetSubscription(ctx, merchantID, subID)
	if err != nil {
		return tenant.Subscription{}, err
	}
	s.SetEnabled(enabled, reason, p.Clock.Now())
	return s, p.Store.PutSubscription(ctx, s)
}
