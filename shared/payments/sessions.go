package payments

import (
	"context"
	"time"

	"github.com/yp/paysvc/shared/apperr"
	"github.com/yp/paysvc/shared/reqwork"
	"github.com/yp/paysvc/shared/tenant"
	"github.com/yp/paysvc/shared/upstream"
)

// SessionResult is the sessions response: the spec's id and sessionData,
// plus the reference (generated when the caller gave none) and expiry.
type SessionResult struct {
	ID          string     `json:"id"`
	SessionData string     `json:"sessionData"`
	Reference   string     `json:"reference"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	URL         string     `json:"url,omitempty"`
}

// CreateSession validates body, adds what the service controls and creates
// a checkout session upstream (docs/openapi.yaml).
func (s *Service) CreateSession(ctx context.Context, m tenant.Merchant, site tenant.Site, body []byte) (SessionResult, error) {
	in, err := ParseSession(body)
	if err != nil {
		return SessionResult{}, err
	}
	ref := reference(ctx, in.Reference, "ses_")
	req := upstream.SessionRequest{
		MerchantAccount:          m.UpstreamAccount,
		Amount:                   in.Amount,
		Reference:                ref,
		ReturnURL:                in.ReturnURL,
		CountryCode:              in.CountryCode,
		ShopperInteraction:       upstream.ShopperInteractionEcommerce,
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
	}
	if req.CountryCode == "" {
		req.CountryCode = m.Country
	}
	if in.StorePaymentMethod {
		t := true
		req.StorePaymentMethod = &t
	}
	resp, err := s.up.CreateSession(ctx, req, callUpstream(ctx))
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
	// notifications carry routing metadata; a lost record is logged, not fatal.
	reqwork.Go(ctx, func(ctx context.Context) {
		if err := s.store.PutSession(ctx, rec); err != nil {
			s.log.ErrorContext(ctx, "storing session record failed", "sessionId", resp.ID, "err", err.Error())
		}
	})
	out := SessionResult{ID: resp.ID, SessionData: resp.SessionData, Reference: ref, URL: resp.URL}
	if !resp.ExpiresAt.IsZero() {
		t := resp.ExpiresAt
		out.ExpiresAt = &t
	}
	return out, nil
}
