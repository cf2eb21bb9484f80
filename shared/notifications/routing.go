package notifications

import (
	"context"
	"errors"
	"fmt"

	"github.com/yp/paysvc/shared/payments"
	"github.com/yp/paysvc/shared/storeerr"
	"github.com/yp/paysvc/shared/tenant"
)

// Routing metadata keys as the upstream echoes them in additionalData.
const (
	keyMetaMerchant = payments.MetadataPrefix + payments.MetaMerchant
	keyMetaSite     = payments.MetadataPrefix + payments.MetaSite
	keyMetaSource   = payments.MetadataPrefix + payments.MetaSource
)

// Ways an owner is found.
const (
	viaPayment  = "payment"
	viaMetadata = "metadata"
	viaSession  = "session"
	viaOperator = "operator" // paysvc-admin notification route --merchant
)

// owner is the merchant (and site) a notification belongs to.
type owner struct {
	merchant  tenant.Merchant
	siteID    string
	source    payments.Source
	sessionID string
	via       string
}

// routeWith finds the merchant owning ev's payment: the payment record
// when there is one (the service's own data; additionalData is not
// covered by the HMAC), else the routing metadata the service sent
// upstream, else the session record. p, err are the read of ev's payment
// record, getMerchant how to read a merchant. The merchant must exist and,
// when both are known, its upstream account must be the item's
// merchantAccountCode (which the HMAC covers). unroutable explains why no
// owner was found.
func (r *Receiver) routeWith(ctx context.Context, ev Event, p payments.Payment, err error,
	getMerchant func(context.Context, string) (tenant.Merchant, error)) (o owner, unroutable string, _ error) {
	ad := ev.Item.AdditionalData
	sessionID := ad[payments.KeyCheckoutSessionID]
	var merchantID string
	switch {
	case err == nil:
		merchantID = p.MerchantID
		o = owner{siteID: p.SiteID, source: p.Source, sessionID: p.SessionID, via: viaPayment}
		if m := ad[keyMetaMerchant]; m != "" && m != p.MerchantID {
			r.Log.WarnContext(ctx, "notification metadata names another merchant than the payment record; the record wins",
				"eventId", ev.ID, "pspReference", ev.PaymentPSP, "merchant", p.MerchantID, "metadataMerchant", m)
		}
	case !errors.Is(err, storeerr.ErrNotFound):
		return owner{}, "", fmt.Errorf("read payment %s: %w", ev.PaymentPSP, err)
	case ad[keyMetaMerchant] != "":
		merchantID = ad[keyMetaMerchant]
		o = owner{siteID: ad[keyMetaSite], source: sourceOf(ad[keyMetaSource]), sessionID: sessionID, via: viaMetadata}
	case sessionID != "":
		s, err := r.Payments.GetSession(ctx, sessionID)
		if err != nil && !errors.Is(err, storeerr.ErrNotFound) {
			return owner{}, "", fmt.Errorf("read session %s: %w", sessionID, err)
		}
		if err == nil {
			merchantID = s.MerchantID
			o = owner{siteID: s.SiteID, source: payments.SourceSessions, sessionID: sessionID, via: viaSession}
		}
	}
	if merchantID == "" {
		return owner{}, "no payment record, routing metadata or session names the merchant", nil
	}
	m, err := getMerchant(ctx, merchantID)
	if errors.Is(err, storeerr.ErrNotFound) {
		return owner{}, "unknown merchant " + merchantID, nil
	}
	if err != nil {
		return owner{}, "", fmt.Errorf("read merchant %s: %w", merchantID, err)
	}
	if acct := ev.Item.MerchantAccountCode; m.UpstreamAccount != "" && acct != "" && acct != m.UpstreamAccount {
		return owner{}, "merchantAccountCode " + acct + " is not the upstream account of merchant " + m.ID, nil
	}
	o.merchant = m
	if o.source == "" {
		o.source = payments.SourceAdvanced
		if sessionID != "" {
			o.source = payments.SourceSessions
		}
	}
	return o, "", nil
}

// sourceOf parses a paymentSource metadata value ("" when unknown).
func sourceOf(v string) payments.Source {
	switch s := payments.Source(v); s {
	case payments.SourceSessions, payments.SourceAdvanced:
		return s
	}
	return ""
}
