package notifications

import (
	"context"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
)

// ErrNotUnroutable: Route was asked to route an event that is not
// unroutable (processed already, or still being received).
var ErrNotUnroutable = errors.New("notifications: the event is not unroutable")

// RouteTo is the owner an operator gives an unroutable event that nothing
// routes to a merchant (no payment record, routing metadata or session).
type RouteTo struct {
	MerchantID string
	SiteID     string // optional
}

// ListUnroutable returns the unroutable events, oldest first, at most
// limit (<= 0: all).
func (r *Receiver) ListUnroutable(ctx context.Context, limit int) ([]Event, error) {
	evs, err := r.Events.ListEvents(ctx, EventUnroutable, limit)
	if err != nil {
		return nil, fmt.Errorf("list unroutable events: %w", err)
	}
	return evs, nil
}

// ListAccountLevel returns the account-level events (EventAccount),
// oldest first, at most limit (<= 0: all).
func (r *Receiver) ListAccountLevel(ctx context.Context, limit int) ([]Event, error) {
	evs, err := r.Events.ListEvents(ctx, EventAccount, limit)
	if err != nil {
		return nil, fmt.Errorf("list account-level events: %w", err)
	}
	return evs, nil
}

// Route processes unroutable event id again, as the upstream's retry would
// have: routed by its payment record, routing metadata or session as on
// arrival (the merchant may exist now); when that still finds no owner and
// to is not nil, as to's merchant's — whose upstream account must still be
// the event's merchantAccountCode. The payment record is updated and the
// deliveries are created and enqueued. It returns the event afterwards;
// an event still unroutable is returned with an error saying why.
func (r *Receiver) Route(ctx context.Context, id string, to *RouteTo) (Event, error) {
	ev, err := r.Events.GetEvent(ctx, id)
	if err != nil {
		return Event{}, fmt.Errorf("event %s: %w", id, err)
	}
	if ev.Status != EventUnroutable {
		return ev, fmt.Errorf("event %s is %s: %w", id, ev.Status, ErrNotUnroutable)
	}
	if err := r.processStored(ctx, id, processOpts{replay: true, to: to}); err != nil {
		return ev, fmt.Errorf("route event %s: %w", id, err)
	}
	if ev, err = r.Events.GetEvent(ctx, id); err != nil {
		return Event{}, fmt.Errorf("event %s: %w", id, err)
	}
	if ev.Status == EventUnroutable {
		return ev, fmt.Errorf("event %s is still unroutable: %s", id, ev.UnroutableReason)
	}
	return ev, nil
}

// routeTo checks the owner an operator gives ev.
func (r *Receiver) routeTo(ctx context.Context, ev Event, to RouteTo) (owner, string, error) {
	m, err := r.Tenants.GetMerchant(ctx, to.MerchantID)
	if errors.Is(err, storeerr.ErrNotFound) {
		return owner{}, "unknown merchant " + to.MerchantID, nil
	}
	if err != nil {
		return owner{}, "", fmt.Errorf("read merchant %s: %w", to.MerchantID, err)
	}
	if acct := ev.Item.MerchantAccountCode; m.UpstreamAccount != "" && acct != "" && acct != m.UpstreamAccount {
		return owner{}, "merchantAccountCode " + acct + " is not the upstream account of merchant " + m.ID, nil
	}
	if to.SiteID != "" {
		site, err := r.Tenants.GetSite(ctx, to.SiteID)
		if errors.Is(err, storeerr.ErrNotFound) || (err == nil && site.MerchantID != m.ID) {
			return owner{}, "site " + to.SiteID + " is not a site of merchant " + m.ID, nil
		}
		if err != nil {
			return owner{}, "", fmt.Errorf("read site %s: %w", to.SiteID, err)
		}
	}
	sessionID := ev.Item.AdditionalData[payments.KeyCheckoutSessionID]
	source := payments.SourceAdvanced
	if sessionID != "" {
		source = payments.SourceSessions
	}
	return owner{merchant: m, siteID: to.SiteID, source: source, sessionID: sessionID, via: viaOperator}, "", nil
}
