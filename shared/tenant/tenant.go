// Package tenant models who calls the service: merchants, their sites, their
// API keys and their webhook subscriptions, and the Store port that keeps them.
package tenant

import (
	"context"
	"time"
)

// Environment is a deployment's environment; keys carry it in their prefix.
type Environment string

// The environments.
const (
	EnvTest Environment = "test"
	EnvLive Environment = "live"
)

// Permission allows one endpoint.
type Permission string

// One permission per endpoint (docs/security.md).
const (
	PermConfig         Permission = "config"
	PermSessions       Permission = "sessions"
	PermPaymentMethods Permission = "payment-methods"
	PermPayments       Permission = "payments"
	PermDetails        Permission = "payments-details"
	PermCaptures       Permission = "captures"
	PermReversals      Permission = "reversals"
	PermAmountUpdates  Permission = "amount-updates"
	PermStoredMethods  Permission = "stored-payment-methods"
	PermRefunds        Permission = "refunds"
	PermPaymentsRead   Permission = "payments-read"
	PermWebhooks       Permission = "webhooks"
)

// AllPermissions lists every permission, in documentation order.
var AllPermissions = []Permission{
	PermConfig, PermSessions, PermPaymentMethods, PermPayments, PermDetails,
	PermCaptures, PermReversals, PermAmountUpdates, PermStoredMethods,
	PermRefunds, PermPaymentsRead, PermWebhooks,
}

// CaptureMode is how a merchant's authorisations are captured.
type CaptureMode string

// Capture modes.
const (
	CaptureAuto   CaptureMode = "auto"
	CaptureManual CaptureMode = "manual"
)

// Merchant is a business taking payments through the service.
type Merchant struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Country string `json:"country"` // ISO 3166-1 alpha-2, the registered country
	// Active is false for a deactivated merchant (its keys get apperr.MerchantNotFound).
	Active      bool        `json:"active"`
	CaptureMode CaptureMode `json:"captureMode"`
	// MultiplePartialCaptures mirrors the merchant's platform account: on,
	// captures continue up to the authorised amount; off (the platform's
	// default), the first capture releases the rest of the authorisation
	// (Checkout v71, captures). The operator changes it at the platform at
	// the same time; it applies to captures requested afterwards.
	MultiplePartialCaptures bool `json:"multiplePartialCaptures,omitempty"`
	// Ecommerce is true once the merchant is set up for ecommerce; with
	// UpstreamAccount, ClientKey and SplitAccount it is required (apperr.MerchantNotEcommerce).
	Ecommerce       bool   `json:"ecommerce"`
	UpstreamAccount string `json:"upstreamAccount"` // the upstream merchantAccount
	ClientKey       string `json:"clientKey"`       // the upstream client key, returned as clientToken
	SplitAccount    string `json:"splitAccount"`    // the merchant's balance account for splits
	// Commission is the platform's cut of every payment: basis points of the
	// amount plus a fixed part in minor units (never more than the amount).
	CommissionAccount string    `json:"commissionAccount,omitempty"`
	CommissionBps     int64     `json:"commissionBps"`
	CommissionFixed   int64     `json:"commissionFixed"`
	CreatedAt         time.Time `json:"createdAt"`
}

// ReadyForEcommerce reports whether the merchant can take ecommerce payments.
func (m Merchant) ReadyForEcommerce() bool {
	return m.Ecommerce && m.UpstreamAccount != "" && m.ClientKey != "" && m.SplitAccount != ""
}

// SiteType is the kind of a merchant's site.
type SiteType string

// Site types. Only ecommerce sites are reachable through /v1/ecom.
const (
	SiteEcommerce SiteType = "ecommerce"
	SitePOS       SiteType = "pos"
)

// Flow is a checkout flow a site may be enabled for.
type Flow string

// Flows.
const (
	FlowSessions Flow = "sessions"
	FlowAdvanced Flow = "advanced"
)

// Site is one of a merchant's points of sale.
type Site struct {
	ID         string    `json:"id"`
	MerchantID string    `json:"merchantId"`
	Name       string    `json:"name"`
	Type       SiteType  `json:"type"`
	Flows      []Flow    `json:"flows"`
	CreatedAt  time.Time `json:"createdAt"`
}

// HasFlow reports whether the site is enabled for f.
func (s Site) HasFlow(f Flow) bool {
	for _, x := range s.Flows {
		if x == f {
			return true
		}
	}
	return false
}

// APIKey is a merchant's secret key, stored only as its SHA-256 hash.
type APIKey struct {
	ID          string       `json:"id"`   // public identifier, e.g. key_3fa9...
	Hash        string       `json:"hash"` // hex SHA-256 of the full key
	Hint        string       `json:"hint"` // prefix and last 4 characters, for humans
	Name        string       `json:"name,omitempty"`
	MerchantID  string       `json:"merchantId"`
	Environment Environment  `json:"environment"`
	Permissions []Permission `json:"permissions"`
	// SiteIDs restricts the key to some of the merchant's sites; empty = all.
	SiteIDs []string `json:"siteIds,omitempty"`
	// RatePerSecond and Burst override the default rate limit when > 0.
	RatePerSecond int        `json:"ratePerSecond,omitempty"`
	Burst         int        `json:"burst,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	RevokedAt     *time.Time `json:"revokedAt,omitempty"`
}

// Revoked reports whether the key was revoked.
func (k APIKey) Revoked() bool { return k.RevokedAt != nil }

// Allows reports whether the key carries permission p.
func (k APIKey) Allows(p Permission) bool {
	for _, x := range k.Permissions {
		if x == p {
			return true
		}
	}
	return false
}

// AllowsSite reports whether the key may act on site id.
func (k APIKey) AllowsSite(id string) bool {
	if len(k.SiteIDs) == 0 {
		return true
	}
	for _, x := range k.SiteIDs {
		if x == id {
			return true
		}
	}
	return false
}

// Secret is one webhook signing secret (`whsec_` + base64). During rotation a
// subscription has two; the older one has ExpiresAt set.
type Secret struct {
	Value     string     `json:"value"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// Subscription is a merchant's webhook target.
type Subscription struct {
	ID         string   `json:"id"`
	MerchantID string   `json:"merchantId"`
	URL        string   `json:"url"`
	Secrets    []Secret `json:"secrets"`
	// EventCodes filters deliveries; empty = every event.
	EventCodes     []string   `json:"eventCodes,omitempty"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabledReason,omitempty"`
	CreatedAt      time.Time  `json:"createdAt"`
	UpdatedAt      *time.Time `json:"updatedAt,omitempty"`
}

// SetEnabled switches the subscription on or off at now. Disabling records
// reason (shown to operators); enabling clears it. Secrets are left as
// they are.
func (s *Subscription) SetEnabled(enabled bool, reason string, now time.Time) {
	s.Enabled = enabled
	s.DisabledReason = ""
	if !enabled {
		s.DisabledReason = reason
	}
	s.UpdatedAt = &now
}

// ActiveSecrets returns the secrets valid at now, newest first.
func (s Subscription) ActiveSecrets(now time.Time) []Secret {
	out := make([]Secret, 0, len(s.Secrets))
	for i := len(s.Secrets) - 1; i >= 0; i-- {
		sec := s.Secrets[i]
		if sec.ExpiresAt == nil || now.Before(*sec.ExpiresAt) {
			out = append(out, sec)
		}
	}
	return out
}

// Store keeps merchants, sites, keys and subscriptions. Getters return
// storeerr.ErrNotFound for a missing record; CreateAPIKey returns
// storeerr.ErrConflict when the hash exists. Lists are sorted by ID.
type Store interface {
	PutMerchant(ctx context.Context, m Merchant) error
	GetMerchant(ctx context.Context, id string) (Merchant, error)
	ListMerchants(ctx context.Context) ([]Merchant, error)

	PutSite(ctx context.Context, s Site) error
	GetSite(ctx context.Context, id string) (Site, error)
	ListSites(ctx context.Context, merchantID string) ([]Site, error)

	CreateAPIKey(ctx context.Context, k APIKey) error
	GetAPIKeyByHash(ctx context.Context, hash string) (APIKey, error)
	ListAPIKeys(ctx context.Context, merchantID string) ([]APIKey, error)
	// RevokeAPIKey marks the merchant's key id revoked at `at` (idempotent);
	// storeerr.ErrNotFound when the merchant has no such key.
	RevokeAPIKey(ctx context.Context, merchantID, keyID string, at time.Time) error

	PutSubscription(ctx context.Context, s Subscription) error
	GetSubscription(ctx context.Context, merchantID, id string) (Subscription, error)
	ListSubscriptions(ctx context.Context, merchantID string) ([]Subscription, error)
}
