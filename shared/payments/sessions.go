package payments

import (
	"context"
	"fmt"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/money"
)

// Session is the service's record of a checkout session it created, used to
// route the session payment's notifications to the merchant.
type Session struct {
	ID                 string
	MerchantID         string
	SiteID             string
	Reference          string
	Amount             money.Amount
	ShopperReference   string
	StorePaymentMethod bool
	CreatedAt          time.Time
	ExpiresAt          time.Time
}

// sessionTTL is how long a session record is kept for routing (the
// upstream's sessions expire after 1 hour; payments may notify later).
const sessionTTL = 30 * 24 * time.Hour

// SessionResult is a created session: the upstream's id and sessionData,
// the reference (generated when the caller gave none), the upstream's
// expiry (zero when it gave none) and the hosted page's URL.
type SessionResult struct {
	ID          string
	SessionData string
	Reference   string
	ExpiresAt   time.Time
	URL         string
}

// CreateSession adds what the service controls to in and creates a
// checkout session upstream (docs/openapi.yaml). The session record is
// written before the answer: lost, the call fails (the merchant never got
// the sessionData, so no shopper can use the session), and its retry gets
// the same session from the platform, under the same key, and records it.
func (s *Service) CreateSession(ctx context.Context, c *Call, in SessionInput) (SessionResult, error) {
	m, site := c.Merchant, c.Site
	ref := reference(c, in.Reference, "ses_")
	req := SessionRequest{
		IdempotencyKey:           c.callUpstream(),
		MerchantAccount:          m.UpstreamAccount,
		Amount:                   in.Amount,
		Reference:                ref,
		ReturnURL:                in.ReturnURL,
		CountryCode:              in.CountryCode,
		ShopperInteraction:       ShopperInteractionEcommerce,
		BlockedPaymentMethods:    mergeBlocked(in.BlockedPaymentMethods),
		Splits:                   splits(m, in.Amount, ref),
		Metadata:                 routingMetadata(m, site, SourceSessions),
		LineItems:                in.LineItems,
		ShopperReference:         in.ShopperReference,
		ShopperEmail:             in.ShopperEmail,
		TelephoneNumber:          in.TelephoneNumber,
		ShopperName:              in.ShopperName,
		ShopperLocale:            in.ShopperLocale,
		StorePaymentMethodMode:   in.StorePaymentMethodMode,
		RecurringProcessingModel: in.RecurringProcessingModel,
		Mode:                     in.Mode,
		StorePaymentMethod:       in.StorePaymentMethod,
		CaptureMode:              m.CaptureMode,
	}
	if req.CountryCode == "" {
		req.CountryCode = m.Country
	}
	resp, err := s.up.CreateSession(ctx, req)
	if err != nil {
		return SessionResult{}, upstreamError(err, apperr.SessionFailed, "session creation")
	}
	now := s.clock.Now()
	rec := Session{
		ID: resp.ID, MerchantID: m.ID, SiteID: site.ID, Reference: ref, Amount: in.Amount,
		ShopperReference: in.ShopperReference, StorePaymentMethod: in.StorePaymentMethod,
		CreatedAt: now, ExpiresAt: now.Add(sessionTTL),
	}
	err = s.record(ctx, "session", rec.ID, func(ctx context.Context) error {
		if err := s.store.PutSession(ctx, rec); err != nil {
			return fmt.Errorf("store session record %s: %w", rec.ID, err)
		}
		return nil
	})
	if err != nil {
		return SessionResult{}, apperr.Wrap(apperr.Internal, "internal error", err)
	}
	return SessionResult{ID: resp.ID, SessionData: resp.SessionData, Reference: ref, ExpiresAt: resp.ExpiresAt, URL: resp.URL}, nil
}
