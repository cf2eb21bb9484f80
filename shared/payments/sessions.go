package payments

import (
	"context"
	"time"

	"github.com/yp/paysvc/shared/apperr"
)

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
// written alongside the rest of the request (c.Wait).
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
		Splits:                   Splits(m, in.Amount, ref),
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
	// The session is usable upstream whatever happens here, and its
	// notifications carry routing metadata; its record is written like
	// every record after an upstream answer (deferred rather than lost).
	s.recordAfter(ctx, c, RecordUpdate{Kind: UpdateSession, Session: &rec, At: now}, known{})
	return SessionResult{ID: resp.ID, SessionData: resp.SessionData, Reference: ref, ExpiresAt: resp.ExpiresAt, URL: resp.URL}, nil
}
