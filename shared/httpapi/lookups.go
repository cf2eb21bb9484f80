package httpapi

import (
	"context"
	"net/http"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/lookup"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/webhooks"
	"github.com/yp/paysvc/shared/webhooksapp"
)

// LookupAPI is the port to the read-only merchant lookups.
type LookupAPI interface {
	Payment(ctx context.Context, m tenant.Merchant, s tenant.Site, psp string) (lookup.PaymentView, error)
	Timeline(ctx context.Context, m tenant.Merchant, s tenant.Site, psp, cursor string) (lookup.TimelineView, error)
	EventHistory(ctx context.Context, m tenant.Merchant, in lookup.EventsInput) (lookup.EventPage, error)
	DeliveryList(ctx context.Context, m tenant.Merchant, in lookup.DeliveriesInput) (lookup.DeliveryPage, error)
}

// WebhooksAPI is the port to merchants' webhook self-service.
type WebhooksAPI interface {
	Retry(ctx context.Context, merchantID, id string) (webhooks.Retried, error)
	SendTest(ctx context.Context, m tenant.Merchant, subscriptionID string) (webhooks.TestReport, error)
}

var (
	_ LookupAPI   = (*lookup.Service)(nil)
	_ WebhooksAPI = (*webhooks.SelfService)(nil)
)

// merchantWide refuses keys limited to sites on the endpoints that span
// every site of the merchant (events, deliveries, webhook tests).
func merchantWide(c *Call) error {
	if len(c.Principal.Key.SiteIDs) > 0 {
		return apperr.New(apperr.Forbidden, "a key limited to sites cannot use merchant-wide endpoints")
	}
	return nil
}

// LookupsRoutes is the lookups function's route group (docs/openapi.yaml):
// reads only, so its function holds no write permission on money movement.
func LookupsRoutes(d *Deps) []Route {
	return []Route{
		{
			Method: http.MethodGet, Pattern: "/v1/ecom/{siteId}/payments/{pspReference}", Name: "payment-lookup",
			Perm: tenant.PermPaymentsRead, Site: true,
			Handle: func(ctx context.Context, c *Call) (any, error) {
				return d.Lookup.Payment(ctx, c.Merchant, c.Site, c.PathValue("pspReference"))
			},
		},
		{
			Method: http.MethodGet, Pattern: "/v1/ecom/{siteId}/payments/{pspReference}/timeline", Name: "payment-timeline",
			Perm: tenant.PermPaymentsRead, Site: true,
			Handle: func(ctx context.Context, c *Call) (any, error) {
				cursor, err := lookup.ParseTimeline(c.Req.URL.Query())
				if err != nil {
					return nil, err
				}
				return d.Lookup.Timeline(ctx, c.Merchant, c.Site, c.PathValue("pspReference"), cursor)
			},
		},
		{
			Method: http.MethodGet, Pattern: "/v1/ecom/events", Name: "events", Perm: tenant.PermWebhooks,
			Handle: func(ctx context.Context, c *Call) (any, error) {
				if err := merchantWide(c); err != nil {
					return nil, err
				}
				in, err := lookup.ParseEvents(c.Req.URL.Query())
				if err != nil {
					return nil, err
				}
				return d.Lookup.EventHistory(ctx, c.Merchant, in)
			},
		},
		{
			Method: http.MethodGet, Pattern: "/v1/ecom/webhook-deliveries", Name: "webhook-deliveries", Perm: tenant.PermWebhooks,
			Handle: func(ctx context.Context, c *Call) (any, error) {
				if err := merchantWide(c); err != nil {
					return nil, err
				}
				in, err := lookup.ParseDeliveries(c.Req.URL.Query())
				if err != nil {
					return nil, err
				}
				return d.Lookup.DeliveryList(ctx, c.Merchant, in)
			},
		},
	}
}

// retryResponse is POST webhook-deliveries/{id}/retry's answer.
type retryResponse struct {
	lookup.DeliveryView
	NextAttempt int `json:"nextAttempt"`
}

// WebhooksRoutes is the webhooks function's route group (docs/openapi.yaml):
// a merchant retries a delivery and tests its endpoints.
func WebhooksRoutes(d *Deps) []Route {
	return []Route{
		{
			Method: http.MethodPost, Pattern: "/v1/ecom/webhook-deliveries/{deliveryId}/retry", Name: "webhook-retry", Perm: tenant.PermWebhooks,
			BodyOptional: true,
			Handle: func(ctx context.Context, c *Call) (any, error) {
				if err := merchantWide(c); err != nil {
					return nil, err
				}
				if err := webhooksapp.DecodeRetry(c.Body); err != nil {
					return nil, err
				}
				r, err := d.Webhooks.Retry(ctx, c.Merchant.ID, c.PathValue("deliveryId"))
				if err != nil {
					return nil, err
				}
				return retryResponse{DeliveryView: lookup.DeliveryViewOf(r.Delivery), NextAttempt: r.NextAttempt}, nil
			},
		},
		{
			Method: http.MethodPost, Pattern: "/v1/ecom/webhooks/test", Name: "webhook-test", Perm: tenant.PermWebhooks,
			BodyOptional: true,
			Handle: func(ctx context.Context, c *Call) (any, error) {
				if err := merchantWide(c); err != nil {
					return nil, err
				}
				sub, err := webhooksapp.DecodeTest(c.Body)
				if err != nil {
					return nil, err
				}
				return d.Webhooks.SendTest(ctx, c.Merchant, sub)
			},
		},
	}
}
